"""The Kubernetes manifests, offline: YAML lint, the Kubernetes schemas (kubernetes-validate ships them), and the
properties the issue asks for, checked against each other and against the image."""

from __future__ import annotations

import copy
import re
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
from yamllint import linter
from yamllint.config import YamlLintConfig

from tests.deploy.files import DEPLOY_DIR, MANIFESTS, YAMLLINT_CONFIG, dockerfile, env_of, last_stage, manifests, one

# The oldest Kubernetes these manifests promise to work on, and the newest the installed schemas know.
OLDEST = "1.29.0"
VERSIONS = sorted({OLDEST, kubernetes_validate.latest_version()})


def _quantity(value: str | int) -> float:
    """CPU or memory quantity in cores or bytes."""
    text = str(value)
    units = {"m": 1e-3, "Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "k": 1e3, "M": 1e6, "G": 1e9}
    match = re.fullmatch(r"([0-9.]+)([A-Za-z]*)", text)
    assert match and (not match.group(2) or match.group(2) in units), text
    return float(match.group(1)) * units.get(match.group(2), 1)


def _pod() -> dict[str, Any]:
    spec: dict[str, Any] = one("StatefulSet")["spec"]["template"]["spec"]
    return spec


def _container() -> dict[str, Any]:
    containers = _pod()["containers"]
    assert len(containers) == 1
    container: dict[str, Any] = containers[0]
    return container


def _env(container: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {e["name"]: e for e in container.get("env", [])}


def test_there_are_manifests() -> None:
    assert {doc["kind"] for _, doc in manifests()} >= {"Namespace", "Service", "StatefulSet"}, MANIFESTS


@pytest.mark.parametrize("path", [*MANIFESTS, YAMLLINT_CONFIG], ids=lambda p: p.name)
def test_yaml_lints_clean(path: Path) -> None:
    config = YamlLintConfig(file=str(YAMLLINT_CONFIG))
    problems = list(linter.run(path.read_text(), config, str(path)))
    assert not problems, "\n".join(f"{path.name}:{p.line}:{p.column} {p.level} {p.message} ({p.rule})"
                                   for p in problems)


def test_yamllint_would_catch_a_problem() -> None:
    config = YamlLintConfig(file=str(YAMLLINT_CONFIG))
    bad = "---\nkey: value\nkey: other\nlist:\n- a\n -  b\n"
    assert list(linter.run(bad, config))


@pytest.mark.parametrize("version", VERSIONS)
def test_manifests_match_the_kubernetes_schemas(version: str) -> None:
    for path, doc in manifests():
        try:
            kubernetes_validate.validate(doc, version, strict=True)
        except kubernetes_validate.ValidationError as exc:
            pytest.fail(f"{path.name}: {doc['kind']} is not valid for Kubernetes {version}: {exc.message} "
                        f"at {'.'.join(map(str, exc.path))}")


def test_schema_validation_would_catch_a_typo() -> None:
    doc = copy.deepcopy(one("StatefulSet"))
    doc["spec"]["template"]["spec"]["containers"][0]["securityContext"]["runAsNonroot"] = True
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(doc, OLDEST, strict=True)


def test_everything_is_in_one_namespace() -> None:
    namespace = one("Namespace")["metadata"]["name"]
    for path, doc in manifests():
        if doc["kind"] != "Namespace":
            assert doc["metadata"].get("namespace") == namespace, path.name


def test_the_service_gives_every_pod_a_dns_name_on_7682() -> None:
    service, sts = one("Service"), one("StatefulSet")
    assert service["spec"]["clusterIP"] == "None"  # headless: per-pod DNS names, no load balancing
    assert sts["spec"]["serviceName"] == service["metadata"]["name"]
    labels = sts["spec"]["template"]["metadata"]["labels"]
    assert sts["spec"]["selector"]["matchLabels"].items() <= labels.items()
    assert service["spec"]["selector"].items() <= labels.items()
    (port,) = service["spec"]["ports"]
    ports = {p["name"]: p["containerPort"] for p in _container()["ports"]}
    assert port["port"] == 7682 and ports[port["targetPort"]] == 7682


def test_probes_use_healthz() -> None:
    container = _container()
    ports = {p["name"]: p["containerPort"] for p in container["ports"]}
    for probe in ("readinessProbe", "livenessProbe"):
        get = container[probe]["httpGet"]
        assert get["path"] == "/healthz", probe
        assert ports.get(get["port"], get["port"]) == 7682, probe


def test_resources_are_sized_for_six_browsers() -> None:
    container = _container()
    requests, limits = container["resources"]["requests"], container["resources"]["limits"]
    assert _quantity(limits["cpu"]) == 4
    assert _quantity(limits["memory"]) == 8 * 2**30
    assert _quantity(requests["memory"]) == _quantity(limits["memory"])  # browsers' memory cannot be squeezed
    assert 0 < _quantity(requests["cpu"]) <= _quantity(limits["cpu"])
    assert _env(container)["MAX_BROWSERS"]["value"] == "6"
    shm = next(v for v in _pod()["volumes"] if v["name"] == _mount("/dev/shm")["name"])
    assert _quantity(shm["emptyDir"]["sizeLimit"]) < _quantity(limits["memory"])


def _mount(path: str) -> dict[str, Any]:
    mounts = [m for m in _container()["volumeMounts"] if m["mountPath"] == path]
    assert len(mounts) == 1, f"no single volume mounted at {path}"
    return mounts[0]


def test_the_state_dir_is_a_persistent_volume_where_the_image_expects_it() -> None:
    sts = one("StatefulSet")
    env = _env(_container())
    state = env["FRAMESTREAM_STATE_DIR"]["value"]
    instructions = dockerfile()
    assert state == env_of(instructions, last_stage(instructions))["FRAMESTREAM_STATE_DIR"]
    claims = {t["metadata"]["name"] for t in sts["spec"]["volumeClaimTemplates"]}
    assert _mount(state)["name"] in claims
    assert not _mount(state).get("readOnly")


def test_the_secret_comes_from_a_kubernetes_secret() -> None:
    env = _env(_container())
    secret = env["TERMINAL_AUTH_SECRET"]
    assert "value" not in secret and secret["valueFrom"]["secretKeyRef"]["name"]
    # Each pod is its own sandbox, named after the pod: the same path segment the gateway routes on.
    assert env["SANDBOX_ID"]["valueFrom"]["fieldRef"]["fieldPath"] == "metadata.name"
    for path, doc in manifests():
        assert doc["kind"] != "Secret", f"{path.name}: do not ship a Secret; deploy/README.md says how to make one"


def test_the_security_context_is_locked_down() -> None:
    pod, container = _pod(), _container()
    instructions = dockerfile()
    image_uid = int(next(i.args for i in instructions if i.keyword == "USER").split(":")[0])
    for context in (pod["securityContext"], container["securityContext"]):
        assert context["runAsNonRoot"] is True
        assert context["runAsUser"] == image_uid == 1000
    sc = container["securityContext"]
    assert sc["allowPrivilegeEscalation"] is False
    assert sc["readOnlyRootFilesystem"] is True
    assert sc["capabilities"] == {"drop": ["ALL"]}
    assert sc.get("privileged", False) is False
    assert pod["securityContext"]["fsGroup"] == image_uid  # the state volume is writable by the image's user
    assert pod.get("automountServiceAccountToken") is False
    for key in ("hostNetwork", "hostPID", "hostIPC"):
        assert not pod.get(key), key
    assert all("hostPath" not in v for v in pod["volumes"])


def test_writable_places_for_a_read_only_root() -> None:
    pod = _pod()
    volumes = {v["name"]: v for v in pod["volumes"]}
    tmp = volumes[_mount("/tmp")["name"]]
    assert "emptyDir" in tmp
    shm = volumes[_mount("/dev/shm")["name"]]
    assert shm["emptyDir"]["medium"] == "Memory" and shm["emptyDir"]["sizeLimit"]


def test_the_seccomp_choice_keeps_chromium_sandboxed() -> None:
    # The runtime's default seccomp profile forbids user namespaces, so with it Chromium's sandbox cannot run;
    # the manifests must not combine it with a sandbox the entrypoint would then refuse to start without.
    pod, container = _pod(), _container()
    sandbox = _env(container).get("FRAMESTREAM_CHROME_SANDBOX", {}).get("value", "auto")
    assert sandbox == "on"
    for context in (pod.get("securityContext", {}), container.get("securityContext", {})):
        assert context.get("seccompProfile", {}).get("type") != "RuntimeDefault"


def _gateway_config() -> str:
    readme = (DEPLOY_DIR / "README.md").read_text()
    blocks = re.findall(r"```nginx\n(.*?)```", readme, re.DOTALL)
    assert len(blocks) == 1, "deploy/README.md should hold one nginx example"
    return blocks[0]


def test_the_documented_gateway_routes_only_sandbox_paths_to_their_pod() -> None:
    config = _gateway_config()
    match = re.search(r"location ~ (\S+) \{", config)
    assert match, config
    pattern = re.compile(match.group(1).replace("(?<", "(?P<"))
    good = {"/sandboxes/framestream-0/ws": ("framestream-0", "ws"),
            "/sandboxes/framestream-12/frames/f1/screenshot": ("framestream-12", "frames/f1/screenshot"),
            "/sandboxes/framestream-3/": ("framestream-3", "")}
    for path, (sandbox, rest) in good.items():
        m = pattern.match(path)
        assert m and m.group("sbx") == sandbox and m.group("rest") == rest, path
    for path in ("/sandboxes/evil.example.com/ws", "/sandboxes/framestream-0.evil.example.com/ws",
                 "/sandboxes/framestream-x/ws", "/sandboxes/../ws", "/sandboxes/framestream-0", "/ws",
                 "/sandboxes/framestream-0%2f/ws", "/sandboxes/other-0/ws"):
        assert not pattern.match(path), path
    # The upstream is the pod's DNS name from the headless Service, in the manifests' namespace, on 7682.
    service = one("Service")
    host = f"$sbx.{service['metadata']['name']}.{service['metadata']['namespace']}.svc.cluster.local:7682"
    assert f"proxy_pass http://{host}/$rest$is_args$args;" in config
    sts = one("StatefulSet")
    assert pattern.match(f"/sandboxes/{sts['metadata']['name']}-0/")
    for header in ("Upgrade $http_upgrade", "Connection $connection_upgrade"):
        assert header in config


def test_pages_cannot_reach_the_cluster_or_the_metadata_endpoint() -> None:
    import ipaddress

    policy, sts = one("NetworkPolicy"), one("StatefulSet")
    labels = sts["spec"]["template"]["metadata"]["labels"]
    assert policy["spec"]["podSelector"]["matchLabels"].items() <= labels.items()
    assert "Egress" in policy["spec"]["policyTypes"]
    blocks = [peer["ipBlock"] for rule in policy["spec"]["egress"] for peer in rule.get("to", []) if "ipBlock" in peer]

    def allowed(address: str) -> bool:
        ip = ipaddress.ip_address(address)
        for block in blocks:
            net = ipaddress.ip_network(block["cidr"])
            if ip.version == net.version and ip in net and not any(
                    ip in ipaddress.ip_network(e) for e in block.get("except", [])):
                return True
        return False

    for internal in ("169.254.169.254", "10.0.0.1", "172.20.1.1", "192.168.1.1", "100.64.0.10", "fd00::1",
                     "fe80::1", "::ffff:169.254.169.254", "::ffff:10.0.0.1", "64:ff9b::a9fe:a9fe", "64:ff9b:1::a00:1"):
        assert not allowed(internal), internal
    for public in ("1.1.1.1", "8.8.8.8", "2606:4700:4700::1111"):
        assert allowed(public), public
