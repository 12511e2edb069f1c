"""The npm package's token recipe and steps against the service's own: the vectors that web/node/tokens.js and
steps.js are checked against (tests/npm/*.test.mjs, run here with node's runner) are checked here with
framestream.core.tokens and framestream.client.steps, so both sides agree byte for byte."""

from __future__ import annotations

import json
import shutil
import subprocess
import tomllib
from pathlib import Path
from typing import Any

import pytest

from framestream.client import steps
from framestream.client.wire import event_to_dict
from framestream.core.errors import TokenError
from framestream.core.tokens import derive_key, mint, verify

HERE = Path(__file__).parent
ROOT = HERE.parents[1]
VECTORS = json.loads((HERE / "token_vectors.json").read_text())
STEPS = json.loads((HERE / "step_vectors.json").read_text())


def test_keys_are_the_services() -> None:
    assert len(VECTORS["keys"]) >= 4
    for v in VECTORS["keys"]:
        assert derive_key(v["secret"].encode(), v["sandbox"]).hex() == v["key_hex"]


def test_minted_tokens_are_the_services_byte_for_byte() -> None:
    for v in VECTORS["mint"]:
        key = derive_key(v["secret"].encode(), v["sandbox"])
        token = mint(key, sandbox=v["sandbox"], role=v["role"], now=float(v["now"]), frame=v["frame"],
                     subject=v["sub"], ttl=v["ttl"], step=v["step"], jti=v["jti"])
        assert token == v["token"], v["claims_json"]
        claims = verify(key, token, sandbox=v["sandbox"], now=float(v["now"]) + 1)
        assert (claims.sub, claims.step) == (v["sub"], v["step"])


def test_refused_tokens_are_refused_with_their_code() -> None:
    for v in VECTORS["reject"]:
        with pytest.raises(TokenError) as err:
            verify(derive_key(v["secret"].encode(), v["sandbox"]), v["token"], sandbox=v["sandbox"], now=v["now"])
        assert err.value.code == v["code"], v["why"]
    for v in VECTORS["accept"]:
        verify(derive_key(v["secret"].encode(), v["sandbox"]), v["token"], sandbox=v["sandbox"], now=v["now"])


def _events(name: str, args: list[Any]) -> list[dict[str, object]]:
    *pos, opts = args if isinstance(args[-1], dict) else [*args, {}]
    renamed = {"moves": "steps"}
    kw = {renamed.get(k, k): v for k, v in opts.items()}
    if name == "scroll":
        pos += [kw.pop("dx", 0.0), kw.pop("dy", 0.0)]
    return [event_to_dict(e) for e in getattr(steps, name)(*pos, **kw)]


def test_step_vectors_are_the_python_clients() -> None:
    for v in STEPS["chord"]:
        assert [event_to_dict(e) for e in steps.chord(v["spec"])] == v["events"], v["spec"]
    for name in ("click", "drag", "scroll", "move", "text"):
        for v in STEPS[name]:
            assert _events(name, v["args"]) == v["events"], (name, v["args"])


def test_package_version_is_the_python_packages() -> None:
    package = json.loads((ROOT / "web" / "package.json").read_text())
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert package["name"] == "framestream"
    assert package["version"] == project["version"]
    assert "dependencies" not in package, "the package has no runtime dependencies"
    assert package["peerDependenciesMeta"]["react"]["optional"] is True


def test_node_units() -> None:
    """tests/npm/*.test.mjs (tokens against the vectors, steps, AgentClient with a scripted socket)."""
    node = shutil.which("node")
    assert node is not None, "node is needed (make test installs it)"
    files = sorted(str(p) for p in HERE.glob("*.test.mjs"))
    assert len(files) >= 3
    proc = subprocess.run([node, "--test", *files], capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stdout[-6000:] + proc.stderr[-2000:]
    assert "# fail 0" in proc.stdout
