"""Starting and ending the child processes a frame owns.

Every child is started through `setpriv --pdeathsig KILL` (util-linux, on every Debian) in a session of its own:
if the service dies however it dies, the kernel kills its direct children, and `terminate_group` can end a
child together with everything it spawned, by process group, never by name.

A child gets an allow-listed environment (`child_environment`), never the service's own: the service's holds
TERMINAL_AUTH_SECRET (dropped once the key is derived, but a child must not depend on that) and whatever else
its operator set, and Chromium's browser process runs the network service, which a page can attack.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Final

from framestream.browser.proctable import in_group, mentioning

# What a child may inherit from the service's environment: locale, time zone, where its files go, fonts,
# certificates and proxies (not XAUTHORITY: the service's holds every display's cookie; a child is given its own
# display's, browser/xauth.py). Everything else (secrets, the service's own settings) stays out.
INHERITED: Final = frozenset({
    "PATH", "HOME", "USER", "LOGNAME", "LANG", "LANGUAGE", "TZ", "TMPDIR", "LD_LIBRARY_PATH",
    "XDG_RUNTIME_DIR", "XDG_CONFIG_HOME", "XDG_CACHE_HOME", "XDG_DATA_HOME", "XDG_DATA_DIRS", "XDG_CONFIG_DIRS",
    "FONTCONFIG_FILE", "FONTCONFIG_PATH", "CHROME_DEVEL_SANDBOX", "SSL_CERT_FILE", "SSL_CERT_DIR",
    "http_proxy", "https_proxy", "no_proxy", "all_proxy", "HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "ALL_PROXY",
})
INHERITED_PREFIXES: Final = ("LC_",)


def child_environment(extra: Mapping[str, str] | None = None, *,
                      parent: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment a child starts with: the allow-listed variables of `parent` (default: this process's)
    and then `extra` (DISPLAY...)."""
    parent = os.environ if parent is None else parent
    env = {name: value for name, value in parent.items()
           if name in INHERITED or name.startswith(INHERITED_PREFIXES)}
    env.update(extra or {})
    return env


async def spawn(
    argv: Sequence[str],
    *,
    env: Mapping[str, str] | None = None,
    pass_fds: Sequence[int] = (),
    log_path: str | None = None,
) -> asyncio.subprocess.Process:
    """Start `argv` as described above; `env` is added to the allow-listed environment (`child_environment`)."""
    out: int = asyncio.subprocess.DEVNULL
    log_fd = None
    if log_path is not None:
        log_fd = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o600)
        out = log_fd
    try:
        return await asyncio.create_subprocess_exec(
            "setpriv", "--pdeathsig", "KILL", *argv,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=out,
            stderr=out,
            env=child_environment(env),
            pass_fds=tuple(pass_fds),
            start_new_session=True,
        )
    finally:
        if log_fd is not None:
            os.close(log_fd)


async def group_ended(pgid: int, *, within: float) -> bool:
    """Wait until no live process is left in group `pgid`, at most `within` seconds; whether none is. For a child
    that ends its own helpers: Chromium's storage service, a process of its own, still writes a profile's local
    storage after the browser process has exited, and ending the group at that moment lost it (a page's
    localStorage set half a second before a service stop was gone after the restart)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + within
    while in_group(pgid):
        if loop.time() >= deadline:
            return False
        await asyncio.sleep(0.02)
    return True


async def terminate_group(proc: asyncio.subprocess.Process, *, grace: float = 5.0) -> None:
    """SIGTERM the child's process group, wait up to `grace`, then SIGKILL it. Idempotent."""
    pgid = proc.pid  # start_new_session made the child its group's leader
    if proc.returncode is None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pgid, signal.SIGTERM)
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(grace):
                await proc.wait()
    # Grandchildren (Chromium's zygote and renderers) may outlive the leader: end the whole group.
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)
    if proc.returncode is None:
        await proc.wait()


def end_leftover_browsers(profiles_dir: Path) -> list[int]:
    """SIGKILL processes still using one of our profiles (a previous run killed with SIGKILL can leave
    Chromium helpers behind). Matched by our own profile path in their command line, ended by pid."""
    ended = []
    for info in mentioning(f"--user-data-dir={profiles_dir}/".encode()):
        if info.pid == os.getpid():
            continue
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(info.pid, signal.SIGKILL)
            ended.append(info.pid)
    return ended
