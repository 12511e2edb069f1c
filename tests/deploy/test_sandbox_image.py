"""What CI can check of the sandbox image without a Docker engine: hadolint, shellcheck, every apt package it names
resolves on the same Debian release, and the Dockerfile says what the issue and the Kubernetes manifests rely on."""

from __future__ import annotations

import glob
import re
import shlex
import subprocess
from pathlib import Path

import pytest

from tests.deploy.files import (
    DOCKERFILE,
    ENTRYPOINT,
    IMAGE_DIR,
    REPO,
    apt_packages,
    dockerfile,
    env_of,
    last_stage,
    tool,
)

# The issue: Chromium, Xvfb, ffmpeg, xautomation, fonts for Latin, CJK and emoji; tini reaps Chromium's orphans;
# util-linux brings setpriv (every child of the service) and unshare (the entrypoint's sandbox check).
REQUIRED_RUNTIME = {"chromium", "xvfb", "ffmpeg", "xautomation", "fonts-dejavu-core", "fonts-noto-cjk",
                    "fonts-noto-color-emoji", "tini", "util-linux", "python3", "x11-xserver-utils"}


def test_hadolint_passes() -> None:
    done = subprocess.run([tool("hadolint"), "--no-color", str(DOCKERFILE)], check=False, capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr


def test_hadolint_would_catch_a_problem(tmp_path: Path) -> None:
    # The check above is not vacuous: the same Dockerfile without one of its justified ignores fails.
    bad = tmp_path / "Dockerfile"
    bad.write_text(DOCKERFILE.read_text().replace("# hadolint ignore=DL3008", "#"))
    done = subprocess.run([tool("hadolint"), "--no-color", str(bad)], check=False, capture_output=True, text=True,
                          timeout=60)
    assert done.returncode != 0 and "DL3008" in done.stdout, done.stdout


def test_shellcheck_passes_on_every_script() -> None:
    scripts = sorted(p for p in IMAGE_DIR.rglob("*") if p.is_file() and p.read_bytes().startswith(b"#!/bin/"))
    assert ENTRYPOINT in scripts
    done = subprocess.run([tool("shellcheck"), "--severity=style", *map(str, scripts)], check=False,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_entrypoint_is_executable_posix_sh() -> None:
    assert ENTRYPOINT.read_text().startswith("#!/bin/sh\n")
    assert ENTRYPOINT.stat().st_mode & 0o111 == 0o111
    done = subprocess.run(["sh", "-n", str(ENTRYPOINT)], check=False, capture_output=True, text=True, timeout=10)
    assert done.returncode == 0, done.stderr


def _os_release() -> dict[str, str]:
    fields = {}
    for line in Path("/etc/os-release").read_text().splitlines():
        key, _, value = line.partition("=")
        fields[key] = value.strip('"')
    return fields


def _release() -> str:
    arg = next(ins.args for ins in dockerfile() if ins.keyword == "ARG" and ins.args.startswith("DEBIAN_RELEASE="))
    return arg.partition("=")[2]


def test_every_apt_package_the_dockerfile_names_resolves() -> None:
    release = _release()
    here = _os_release()
    if here.get("ID") != "debian" or here.get("VERSION_CODENAME") != release:
        pytest.skip(f"the image is Debian {release}; this machine is {here.get('PRETTY_NAME')}, whose package "
                    "names prove nothing about it")
    if not glob.glob("/var/lib/apt/lists/*_Packages*"):
        pytest.skip("apt has no package lists here: run `apt-get update` once")
    packages = sorted({p for stage in apt_packages(dockerfile()).values() for p in stage})
    env = {"LANG": "C", "PATH": "/usr/sbin:/usr/bin:/sbin:/bin"}
    policy = subprocess.run(["apt-cache", "policy", *packages], check=False, capture_output=True, text=True, env=env,
                            timeout=120)
    candidates = dict(re.findall(r"^(\S+):\n(?:\s+Installed:.*\n)?\s+Candidate:\s*(\S+)", policy.stdout, re.MULTILINE))
    missing = [p for p in packages if candidates.get(p, "(none)") == "(none)"]
    assert not missing, f"no installation candidate on Debian {release} for: {', '.join(missing)}"
    # And together they install (dependencies resolve, nothing conflicts), as the image's RUN lines ask.
    done = subprocess.run(["apt-get", "install", "--dry-run", "--no-install-recommends", "-qq", *packages], check=False,
                          capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]


def test_the_dockerfile_installs_what_the_sandbox_needs() -> None:
    instructions = dockerfile()
    stages = apt_packages(instructions)
    runtime = set(stages[last_stage(instructions)])
    assert runtime >= REQUIRED_RUNTIME, f"missing from the runtime stage: {sorted(REQUIRED_RUNTIME - runtime)}"
    # The build stage compiles the package's C part, with setuptools and pip pinned by the dev lock: those of a
    # bookworm venv (66.1, 23.0) refuse pyproject.toml's license expression (as a Python 3.11 venv's did here).
    assert set(stages[0]) >= {"gcc", "libc6-dev", "python3-dev"}, stages[0]
    build = " ".join(ins.args for ins in instructions if ins.stage == 0 and ins.keyword == "RUN")
    assert re.search(r"sed -n -e '/\^pip==/,.*' -e '/\^setuptools==/,.*' requirements-dev.lock", build), build
    pinned, package = build.index("--no-deps -r build.lock"), build.index("-e /opt/framestream/src")
    assert pinned < build.index("-r requirements.lock") < package
    # Both stages on the same base, so the venv built in the first runs on the second's Python.
    bases = [ins.args.split()[0] for ins in instructions if ins.keyword == "FROM"]
    assert len(set(bases)) == 1 and bases[0].startswith("debian:${DEBIAN_RELEASE}"), bases


def test_the_image_runs_the_entrypoint_as_uid_1000_on_port_7682() -> None:
    instructions = dockerfile()
    final = [ins for ins in instructions if ins.stage == last_stage(instructions)]
    by_keyword = {ins.keyword: ins for ins in final}
    assert by_keyword["USER"].args.split(":")[0] == "1000"
    assert by_keyword["EXPOSE"].args.split() == ["7682"]
    entrypoint = by_keyword["ENTRYPOINT"].exec_form()
    assert entrypoint[0].endswith("/tini") and entrypoint[-1] == "/usr/local/bin/framestream-entrypoint", entrypoint
    copies = [shlex.split(ins.args) for ins in final if ins.keyword == "COPY"]
    assert any(c[-2:] == ["sandbox-image/entrypoint.sh", entrypoint[-1]] for c in copies), copies
    health = by_keyword["HEALTHCHECK"]
    assert "/healthz" in health.args and "7682" in health.args
    env = env_of(instructions, last_stage(instructions))
    state = env["FRAMESTREAM_STATE_DIR"]
    assert by_keyword["VOLUME"].args == f'["{state}"]'
    assert any(f"install -d -o 1000 -g 1000 -m 0700 {state}" in ins.args for ins in final if ins.keyword == "RUN")
    assert env["PATH"].startswith("/opt/framestream/venv/bin:")
    assert env.get("FRAMESTREAM_CHROME_SANDBOX", "auto") != "off"


def test_the_build_context_sends_what_the_dockerfile_copies() -> None:
    ignore = (IMAGE_DIR / "Dockerfile.dockerignore").read_text().splitlines()
    allowed = {line[1:].rstrip("/") for line in ignore if line.startswith("!")}
    sources = []
    for ins in dockerfile():
        if ins.keyword == "COPY" and "--from=" not in ins.args:
            words = [w for w in shlex.split(ins.args) if not w.startswith("--")]
            sources += [w.rstrip("/") for w in words[:-1]]
    assert sources
    for source in sources:
        assert source in allowed, f"COPY {source} is excluded by Dockerfile.dockerignore"
        assert (REPO / source).exists(), source
