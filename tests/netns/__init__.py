"""Run a helper in a network namespace of its own, with only `lo` and its traffic shaped by `tc`.

`run(shape, module, args)` re-executes `python -m <module>` under `unshare -n` after bringing `lo` up at MTU 1500
and applying `shape` (tc commands): the service, its browsers and the viewers all run inside, so nothing ever
leaves loopback and nothing outside sees the limit. The helper prints one JSON object as its last line of output.
Needs root (CI is) and iproute2 (`ip`, `tc`; in the Makefile's packages).
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]


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


def run(shape: list[str], module: str, args: dict[str, Any], timeout: float) -> dict[str, Any]:
    """Run `python -m module '<args as JSON>'` in a fresh network namespace shaped by `shape`; its JSON result."""
    steps = ["set -e", "ip link set lo mtu 1500", "ip link set lo up", *shape,
             "exec " + shlex.join([sys.executable, "-m", module, json.dumps(args)])]
    proc = subprocess.run(["unshare", "-n", "sh", "-c", "; ".join(steps)], capture_output=True, text=True,
                          timeout=timeout, cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)})
    lines = proc.stdout.strip().splitlines()
    if proc.returncode != 0 or not lines:
        raise RuntimeError(f"{module} in a namespace exited {proc.returncode}:\n{proc.stdout[-3000:]}\n"
                           f"{proc.stderr[-3000:]}")
    result: dict[str, Any] = json.loads(lines[-1])
    return result
