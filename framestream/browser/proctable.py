"""The process table as /proc shows it: one walker for everything that looks for processes.

Nothing here starts or ends a process. Processes come and go while the table is read: one that exits between
listing /proc and reading its files is skipped, never an error.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass


@dataclass(frozen=True)
class ProcessInfo:
    pid: int
    ppid: int
    pgrp: int
    # NUL-separated as /proc/PID/cmdline holds it; Chromium's children rewrite theirs into one space-separated
    # string. Empty for kernel threads and zombies.
    cmdline: bytes
    state: str = ""  # one letter as /proc/PID/stat writes it (R, S, T, Z...)

    @property
    def zombie(self) -> bool:
        return self.state == "Z"

    @property
    def args(self) -> list[bytes]:
        """The command line split at its NULs (a rewritten Chromium command line stays one item)."""
        return self.cmdline.rstrip(b"\0").split(b"\0") if self.cmdline else []


def read_process(pid: int) -> ProcessInfo | None:
    """One process's entry; None when it is gone (or its files are unreadable)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            # The command name (field 2) is in parentheses and may hold spaces or ')': split after the last one.
            fields = f.read().rsplit(b")", 1)[1].split()
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            cmdline = f.read()
        return ProcessInfo(pid=pid, ppid=int(fields[1]), pgrp=int(fields[2]), cmdline=cmdline,
                           state=fields[0].decode())
    except (OSError, IndexError, ValueError):
        return None


def list_processes() -> Iterator[ProcessInfo]:
    """Every process alive while the table is read, in /proc's order; those that vanish meanwhile are skipped."""
    for entry in os.listdir("/proc"):
        if entry.isdigit() and (info := read_process(int(entry))) is not None:
            yield info


def descendants(pid: int, processes: Iterable[ProcessInfo] | None = None) -> list[ProcessInfo]:
    """Every process below `pid` (children, grandchildren...), parents before their children."""
    children: dict[int, list[ProcessInfo]] = {}
    for info in list_processes() if processes is None else processes:
        children.setdefault(info.ppid, []).append(info)
    out: list[ProcessInfo] = []
    stack = [pid]
    while stack:
        for child in children.get(stack.pop(), []):
            out.append(child)
            stack.append(child.pid)
    return out


def in_group(pgrp: int) -> list[ProcessInfo]:
    """Every live (non-zombie) process of process group `pgrp`: a child started in a session of its own and
    everything it forked."""
    return [info for info in list_processes() if info.pgrp == pgrp and not info.zombie]


def mentioning(marker: bytes) -> list[ProcessInfo]:
    """Every live (non-zombie) process whose command line contains `marker` (a state dir, a profile path)."""
    return [info for info in list_processes() if marker in info.cmdline and not info.zombie]
