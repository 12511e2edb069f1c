"""Run a command in a network namespace of its own that has only `lo`, so no WebRTC packet can leave it.

As root (CI) `unshare -n`; otherwise `unshare -rn` (a user namespace maps us to root inside). `lo` starts
down in a new namespace: `ip link set lo up` first.
"""

from __future__ import annotations

import os
import shlex
import socket
import subprocess
from collections.abc import Sequence

INSIDE = "FRAMESTREAM_IN_NETNS"  # set for the command run inside


def in_netns(argv: Sequence[str], *, env: dict[str, str] | None = None, timeout: float = 900.0,
             ) -> subprocess.CompletedProcess[str]:
    unshare = ["unshare", "-n"] if os.geteuid() == 0 else ["unshare", "-rn"]
    script = "ip link set lo up && exec " + shlex.join(argv)
    return subprocess.run([*unshare, "sh", "-c", script], env={**os.environ, **(env or {}), INSIDE: "1"},
                          capture_output=True, text=True, timeout=timeout, check=False)


def only_loopback() -> bool:
    """Whether this process's network namespace has no interface but `lo`."""
    return interfaces() == ["lo"]


def interfaces() -> list[str]:
    """This network namespace's interfaces (/sys/class/net shows the namespace sysfs was mounted in)."""
    return [name for _index, name in socket.if_nameindex()]
