"""What processes cost in memory, from /proc/PID/smaps_rollup: nothing here starts or ends a process.

PSS (proportional set size) divides every shared page among the processes that map it, so the PSS of disjoint
sets of processes adds up to the machine's use; it reads lower while other programs map the same files (other
Chromiums). USS (Private_Clean + Private_Dirty) is what ending the processes would give back.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Memory:
    pss: int = 0  # bytes
    uss: int = 0  # bytes

    def __add__(self, other: Memory) -> Memory:
        return Memory(self.pss + other.pss, self.uss + other.uss)


def process_memory(pid: int) -> Memory:
    """One process's PSS and USS; zero when it is gone or unreadable."""
    pss = uss = 0
    try:
        with open(f"/proc/{pid}/smaps_rollup", "rb") as fh:
            for line in fh:
                if line.startswith(b"Pss:"):
                    pss += int(line.split()[1])
                elif line.startswith((b"Private_Clean:", b"Private_Dirty:")):
                    uss += int(line.split()[1])
    except (OSError, ValueError, IndexError):
        return Memory()
    return Memory(pss * 1024, uss * 1024)


def total_memory(pids: Iterable[int]) -> Memory:
    total = Memory()
    for pid in set(pids):
        total += process_memory(pid)
    return total


__all__ = ["Memory", "process_memory", "total_memory"]
