"""Run a command in a network namespace of its own that has only `lo`, so no WebRTC packet can leave it.

As root (CI) `unshare -n`; otherwise `unshare -rn` (a user namespace maps us to root inside). `lo` starts
down in a new namespace: `ip link set lo up` first. With a `shape` (tc commands, tests/netns `tbf`), `lo` gets
MTU 1500 first: a token bucket's burst must hold a whole packet, and lo's own MTU is 64 KiB.
"""

from __future__ import annotations

import contextlib
import os
import shlex
import signal
import socket
import subprocess
from collections.abc import Sequence

INSIDE = "FRAMESTREAM_IN_NETNS"  # set for the command run inside
LINK = "FRAMESTREAM_TEST_LINK"  # the rate lo is limited to inside, as tc reads it ("1mbit"); unset: unlimited


def in_netns(argv: Sequence[str], *, env: dict[str, str] | None = None, timeout: float = 900.0,
             shape: Sequence[str] = ()) -> subprocess.CompletedProcess[str]:
    unshare = ["unshare", "-n"] if os.geteuid() == 0 else ["unshare", "-rn"]
    steps = ["ip link set lo mtu 1500", *shape] if shape else []
    script = " && ".join([*steps, "ip link set lo up", "exec " + shlex.join(argv)])
    # A session of its own: on a timeout (or pytest-timeout's interruption) the whole run inside, the inner pytest
    # and the services it started, is ended by its group, not only the inner pytest (which orphaned its service).
    proc = subprocess.Popen([*unshare, "sh", "-c", script], env={**os.environ, **(env or {}), INSIDE: "1"},
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        out, err = proc.communicate(timeout=timeout)
    except BaseException:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        raise
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


def only_loopback() -> bool:
    """Whether this process's network namespace has no interface but `lo`."""
    return interfaces() == ["lo"]


def interfaces() -> list[str]:
    """This network namespace's interfaces (/sys/class/net shows the namespace sysfs was mounted in)."""
    return [name for _index, name in socket.if_nameindex()]
