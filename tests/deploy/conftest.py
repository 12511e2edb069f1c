"""Running the sandbox image's entrypoint outside Docker, as an unprivileged user.

As root, the tests pick a uid that has no passwd entry and owns no process (the harder case, as with the arbitrary
uids some clusters assign; the image's uid 1000 has an entry) and drop to it with `setpriv`; as any other user they
run as themselves. Everything the user writes lives in one temporary directory under /tmp that is removed after.
Every process is started through `setpriv --pdeathsig KILL`, so nothing outlives the test process.
"""

from __future__ import annotations

import contextlib
import grp
import os
import pwd
import shlex
import shutil
import signal
import subprocess
import sys
import sysconfig
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.deploy.files import ENTRYPOINT, REPO
from tests.support import TEST_SECRET, Service, processes_using

HERE = Path(__file__).resolve().parent
NO_USERNS = HERE / "no_userns.py"
IMPORTS = "import framestream, av, aiohttp, numpy, uvloop, websockets"


def _free_uid() -> int:
    owners = set()
    for entry in os.listdir("/proc"):
        with contextlib.suppress(OSError):
            owners.add(os.stat(f"/proc/{entry}").st_uid)
    for uid in range(64990, 64000, -1):
        with contextlib.suppress(KeyError):
            pwd.getpwuid(uid)
            continue
        with contextlib.suppress(KeyError):
            grp.getgrgid(uid)
            continue
        if uid not in owners:
            return uid
    raise RuntimeError("no free uid in 64001..64990")


@dataclass
class Unprivileged:
    """An unprivileged user, a work directory it owns parts of, and a `framestream` on its PATH."""

    uid: int
    gid: int
    root: Path
    python: str
    pythonpath: str

    @property
    def prefix(self) -> list[str]:
        drop = [] if os.geteuid() == self.uid else [f"--reuid={self.uid}", f"--regid={self.gid}", "--clear-groups"]
        return ["setpriv", *drop, "--pdeathsig", "KILL"]

    def own_dir(self, name: str) -> Path:
        path = self.root / name
        path.mkdir(mode=0o700)
        os.chown(path, self.uid, self.gid)
        return path

    def env(self, **extra: str) -> dict[str, str]:
        env = {
            "PATH": f"{self.root / 'bin'}:/usr/local/bin:/usr/bin:/bin",
            "LANG": "C.UTF-8",
            "TERMINAL_AUTH_SECRET": TEST_SECRET,
            "SANDBOX_ID": "test",
            "FRAMESTREAM_HOST": "127.0.0.1",
            "HOME": str(self.root / "home"),
            "TMPDIR": str(self.root / "tmp"),
        }
        if self.pythonpath:
            env["PYTHONPATH"] = self.pythonpath
        env.update(extra)
        return env

    def run(self, argv: list[str], env: dict[str, str], timeout: float = 30) -> subprocess.CompletedProcess[str]:
        return subprocess.run([*self.prefix, *argv], check=False, env=env, capture_output=True, text=True,
                              timeout=timeout, cwd=self.root)


def _python_for(prefix: list[str]) -> tuple[str, str]:
    """An interpreter the unprivileged user can run that imports framestream and its dependencies.

    Normally this test's own Python. Where that one lives somewhere the user cannot reach (e.g. a venv whose
    interpreter is under /root), the system Python of the same version with this venv's site-packages and the
    repository on PYTHONPATH."""
    candidates = [(sys.executable, "")]
    system = f"/usr/bin/python{sys.version_info.major}.{sys.version_info.minor}"
    if os.path.exists(system):
        candidates.append((system, f"{REPO}:{sysconfig.get_paths()['purelib']}"))
    tried = []
    for python, pythonpath in candidates:
        env = {"PATH": "/usr/bin:/bin", **({"PYTHONPATH": pythonpath} if pythonpath else {})}
        # Through a shell, as the `framestream` wrapper runs it: an exec straight from setpriv can succeed where
        # a later one fails (seen here with an interpreter under /root).
        done = subprocess.run([*prefix, "/bin/sh", "-c", 'exec "$0" -c "$1"', python, IMPORTS], check=False, env=env,
                              capture_output=True, text=True, timeout=60, cwd="/")
        if done.returncode == 0:
            return python, pythonpath
        tried.append(f"{python}: {done.stderr.strip().splitlines()[-1:] or done.returncode}")
    pytest.fail("the unprivileged test user cannot run framestream from this checkout (is the repository or the "
                "venv readable by other users?); tried " + "; ".join(tried))


@pytest.fixture(scope="session")
def unprivileged() -> Iterator[Unprivileged]:
    if os.geteuid() == 0:
        uid = gid = _free_uid()
    else:
        uid, gid = os.getuid(), os.getgid()
    root = Path(tempfile.mkdtemp(prefix="framestream-deploy-", dir="/tmp"))
    try:
        os.chmod(root, 0o755)
        user = Unprivileged(uid, gid, root, "", "")
        user.python, user.pythonpath = _python_for(user.prefix)
        user.own_dir("home")
        user.own_dir("tmp")
        bin_dir = root / "bin"
        bin_dir.mkdir(mode=0o755)
        wrapper = bin_dir / "framestream"
        wrapper.write_text(f'#!/bin/sh\nexec {shlex.quote(user.python)} -m framestream "$@"\n')
        wrapper.chmod(0o755)
        yield user
    finally:
        for pid in processes_using(str(root)):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        shutil.rmtree(root, ignore_errors=True)


class EntrypointService(Service):
    """`framestream serve` started the way the image starts it: through sandbox-image/entrypoint.sh."""

    def __init__(self, user: Unprivileged, name: str, *, env: dict[str, str] | None = None,
                 wrap: list[str] | None = None, argv: list[str] | None = None) -> None:
        super().__init__(state_dir=user.root / name / "state")
        self.user = user
        self.name = name
        self.wrap = wrap or []
        self.argv = argv or [str(ENTRYPOINT)]
        self.extra_env = env or {}

    def start(self, timeout: float = 20.0) -> EntrypointService:
        from tests.support import free_port

        self.port = self.port or free_port()
        base = self.user.own_dir(self.name)
        self.state_dir = base / "state"
        tmp = base / "tmp"
        for path in (self.state_dir, tmp):
            path.mkdir(mode=0o700)
            os.chown(path, self.user.uid, self.user.gid)
        env = self.user.env(FRAMESTREAM_STATE_DIR=str(self.state_dir), FRAMESTREAM_PORT=str(self.port),
                            TMPDIR=str(tmp), HOME="/nonexistent", **self.extra_env)
        self.log_path = self.user.root / f"{self.name}.log"
        with open(self.log_path, "ab") as log:
            self.proc = subprocess.Popen([*self.user.prefix, *self.wrap, *self.argv], env=env, stdout=log,
                                         stderr=subprocess.STDOUT, cwd=base)
        self.wait_answering(timeout)  # an exit is the caller's to check, with the log
        return self


@pytest.fixture
def services() -> Iterator[list[EntrypointService]]:
    """Services a test starts; each is stopped (SIGTERM, then SIGKILL) and checked for leftovers after."""
    started: list[EntrypointService] = []
    yield started
    for svc in started:
        if svc.proc is not None:
            svc.stop()
            svc.kill_leftovers()
