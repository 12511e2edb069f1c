"""The npm package as an app gets it: web/'s dev dependencies installed from its lock (`npm ci`, kept in
web/node_modules while the lock is unchanged), `npm pack` in web/, and the tarball installed into a scratch project
with the dev dependencies pinned in web/package-lock.json. The registry is the only network used (npm's cache first)."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[2]
WEB = ROOT / "web"
HERE = Path(__file__).parent
# What the scratch project takes from web/package-lock.json, at the versions pinned there.
SCRATCH_DEPS = ("typescript", "esbuild", "react", "react-dom", "@types/react", "ws")


def npm(*args: str, cwd: Path, timeout: float = 300) -> str:
    exe = shutil.which("npm")
    assert exe is not None, "npm is needed for the npm package's tests (make test installs node)"
    env = {**os.environ, "npm_config_update_notifier": "false", "npm_config_fund": "false",
           "npm_config_audit": "false"}
    proc = subprocess.run([exe, *args], cwd=cwd, capture_output=True, text=True, timeout=timeout, env=env,
                          check=False)
    assert proc.returncode == 0, f"npm {' '.join(args)} failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    return proc.stdout


def node(*args: str, cwd: Path, timeout: float = 120, check: bool = True) -> subprocess.CompletedProcess[str]:
    exe = shutil.which("node")
    assert exe is not None, "node is needed"
    proc = subprocess.run([exe, *args], cwd=cwd, capture_output=True, text=True, timeout=timeout, check=False)
    if check:
        assert proc.returncode == 0, f"node {' '.join(args)} failed:\n{proc.stdout[-4000:]}\n{proc.stderr[-4000:]}"
    return proc


def locked_versions() -> dict[str, str]:
    lock = json.loads((WEB / "package-lock.json").read_text())
    return {name: str(lock["packages"][f"node_modules/{name}"]["version"]) for name in SCRATCH_DEPS}


@pytest.fixture(scope="session")
def web_dev_deps() -> Path:
    """web/node_modules as web/package-lock.json pins it (`npm ci` only when the lock changed)."""
    digest = hashlib.sha256((WEB / "package-lock.json").read_bytes()).hexdigest()
    stamp = WEB / "node_modules" / ".framestream-lock"
    if not stamp.exists() or stamp.read_text() != digest:
        npm("ci", "--prefer-offline", cwd=WEB)
        stamp.write_text(digest)
    return WEB / "node_modules"


@pytest.fixture(scope="session")
def tarball(web_dev_deps: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """`npm pack` of web/."""
    out = tmp_path_factory.mktemp("pack")
    info = json.loads(npm("pack", "--json", "--pack-destination", str(out), cwd=WEB))
    path = out / info[0]["filename"]
    assert path.exists()
    return path


@pytest.fixture(scope="session")
def scratch(tarball: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A scratch app with the tarball installed (and the pinned TypeScript, esbuild, React, ws)."""
    app = tmp_path_factory.mktemp("app")
    deps = {"framestream": f"file:{tarball}", **locked_versions()}
    (app / "package.json").write_text(json.dumps({"name": "scratch-app", "private": True, "type": "module",
                                                  "dependencies": deps}, indent=1))
    npm("install", "--prefer-offline", "--no-package-lock", cwd=app)
    installed = app / "node_modules" / "framestream"
    assert (installed / "package.json").exists() and not installed.is_symlink()
    yield app
