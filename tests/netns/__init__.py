"""Runs in network namespaces of their own, with only `lo` and, when shaped, its traffic limited by `tc`.

`in_netns(argv)` runs a command under `unshare -n` (as root, CI; otherwise `unshare -rn`, a user namespace mapping
us to root inside) after bringing `lo` up: so no packet ever leaves loopback (ICE libraries pick the machine's other
addresses unless told not to) and nothing outside sees a limit. With a `shape` (tc commands: `tbf`, `port_limit`),
`lo` gets MTU 1500 first: a token bucket's burst must hold a whole packet, and lo's own MTU is 64 KiB.
`run(shape, module, args)` runs `python -m <module>` so, a helper that prints one JSON object as its last line.
Needs iproute2 (`ip`, `tc`) and util-linux (`unshare`), in the Makefile's packages.
"""

from __future__ import annotations

import contextlib
import json
import os
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
INSIDE = "FRAMESTREAM_IN_NETNS"  # set for the command run inside
LINK = "FRAMESTREAM_TEST_LINK"  # the rate lo is limited to inside, as tc reads it ("1mbit"); unset: unlimited

_running: set[subprocess.Popen[str]] = set()
_running_lock = threading.Lock()
_ending = False  # the session ends (`end_all`): no new run starts


def missing() -> str | None:
    """Why namespaces cannot be used here (None when they can)."""
    tools = [tool for tool in ("unshare", "ip", "tc") if shutil.which(tool) is None]
    if tools:
        return f"missing {', '.join(tools)} (iproute2, util-linux)"
    if os.geteuid() != 0:
        return "needs root for unshare -n and tc"
    return None


def tbf(rate: str) -> list[str]:
    """Every packet on lo through one token bucket (both directions of every connection)."""
    return [f"tc qdisc add dev lo root tbf rate {rate} burst 16kb latency 300ms"]


def port_limit(rate: str, port: int) -> list[str]:
    """Only packets to local port `port` (the slow viewer's end of its connection) limited to `rate`."""
    return [
        "tc qdisc add dev lo root handle 1: htb default 10",
        "tc class add dev lo parent 1: classid 1:10 htb rate 10gbit",
        f"tc class add dev lo parent 1: classid 1:20 htb rate {rate} burst 16kb",
        f"tc filter add dev lo parent 1: protocol ip prio 1 u32 match ip dport {port} 0xffff flowid 1:20",
    ]


def in_netns(argv: Sequence[str], *, env: dict[str, str] | None = None, timeout: float = 900.0,
             shape: Sequence[str] = ()) -> subprocess.CompletedProcess[str]:
    """Run `argv` in a fresh namespace shaped by `shape`, from the repository's root; what it printed."""
    unshare = ["unshare", "-n"] if os.geteuid() == 0 else ["unshare", "-rn"]
    steps = ["ip link set lo mtu 1500", *shape] if shape else []
    script = " && ".join([*steps, "ip link set lo up", "exec " + shlex.join(argv)])
    # A session of its own: on a timeout (or pytest-timeout's interruption) the whole run inside, the inner pytest
    # and the services it started, is ended by its group, not only the inner pytest (which orphaned its service).
    with _running_lock:  # started and registered at once, so `end_all` misses none
        if _ending:
            raise RuntimeError("the session is ending: no run in a namespace starts now")
        proc = subprocess.Popen([*unshare, "sh", "-c", script], env={**os.environ, **(env or {}), INSIDE: "1"},
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
                                cwd=ROOT)
        _running.add(proc)
    try:
        out, err = proc.communicate(timeout=timeout)
    except BaseException:
        _end(proc)
        proc.communicate()
        raise
    finally:
        with _running_lock:
            _running.discard(proc)
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


def end_all() -> None:
    """End every run still going, by its group, and start no other (the session's end, when a run beside the suite
    outlived it)."""
    global _ending
    with _running_lock:
        _ending = True
        procs = list(_running)
    for proc in procs:
        _end(proc)


def _end(proc: subprocess.Popen[str]) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)


def run(shape: list[str], module: str, args: dict[str, Any], timeout: float) -> dict[str, Any]:
    """Run `python -m module '<args as JSON>'` in a fresh network namespace shaped by `shape`; its JSON result."""
    done = in_netns([sys.executable, "-m", module, json.dumps(args)], shape=shape, timeout=timeout,
                    env={"PYTHONPATH": str(ROOT)})
    lines = done.stdout.strip().splitlines()
    if done.returncode != 0 or not lines:
        raise RuntimeError(f"{module} in a namespace exited {done.returncode}:\n{done.stdout[-3000:]}\n"
                           f"{done.stderr[-3000:]}")
    result: dict[str, Any] = json.loads(lines[-1])
    return result


def only_loopback() -> bool:
    """Whether this process's network namespace has no interface but `lo`."""
    return interfaces() == ["lo"]


def interfaces() -> list[str]:
    """This network namespace's interfaces (/sys/class/net shows the namespace sysfs was mounted in)."""
    return [name for _index, name in socket.if_nameindex()]
