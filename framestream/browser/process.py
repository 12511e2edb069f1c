"""Starting and ending the child processes a frame owns.

Every child is started through `setpriv --pdeathsig KILL` (util-linux, on every Debian) in a session of its own:
if the service dies however it dies, the kernel kills its direct children, and `terminate_group` can end a
child together with everything it spawned, by process group, never by name.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
from collections.abc import Mapping, Sequence


async def spawn(
    argv: Sequence[str],
    *,
    env: Mapping[str, str] | None = None,
    pass_fds: Sequence[int] = (),
    log_path: str | None = None,
) -> asyncio.subprocess.Process:
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
            env=dict(env) if env is not None else None,
            pass_fds=tuple(pass_fds),
            start_new_session=True,
        )
    finally:
        if log_fd is not None:
            os.close(log_fd)


async def terminate_group(proc: asyncio.subprocess.Process, *, grace: float = 5.0) -> None:
    """SIGTERM the child's process group, wait up to `grace`, then SIGKILL it. Idempotent."""
    pgid = proc.pid  # start_new_session made the child its group's leader
    if proc.returncode is None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pgid, signal.SIGTERM)
        try:
            await asyncio.wait_for(proc.wait(), grace)
        except TimeoutError:
            pass
    # Grandchildren (Chromium's zygote and renderers) may outlive the leader: end the whole group.
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)
    if proc.returncode is None:
        await proc.wait()
