"""CPU and memory of processes, read from /proc: nothing here starts or ends a process.

vCPU = CPU seconds (utime + stime of every thread, /proc/<pid>/stat fields 14 and 15) divided by wall seconds.
A `CpuWindow` reads every process of each named group at its start and at its end; a process that appears
during the window counts from zero, one that exits during it loses what it used (both are rare here: the
windows are taken while nothing starts or stops). The machine's own busy time (/proc/stat) is read over the
same window, so a reader can see how much of the machine other work (other engineers' tests) took.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field

from framestream.browser.proctable import ProcessInfo, in_group

CLK_TCK = os.sysconf("SC_CLK_TCK")
NCPU = os.cpu_count() or 1


def cpu_ticks(pid: int) -> int | None:
    """utime + stime of a live process (all its threads), in clock ticks; None when it is gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            fields = f.read().rsplit(b")", 1)[1].split()
    except OSError:
        return None
    # fields[0] is field 3 (state): utime is field 14, stime field 15.
    return int(fields[11]) + int(fields[12])


def thread_ticks(pid: int) -> dict[int, int]:
    """utime + stime of each thread of a process, by thread id."""
    out: dict[int, int] = {}
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return out
    for tid in tids:
        try:
            with open(f"/proc/{pid}/task/{tid}/stat", "rb") as f:
                fields = f.read().rsplit(b")", 1)[1].split()
        except OSError:
            continue
        out[int(tid)] = int(fields[11]) + int(fields[12])
    return out


@dataclass
class ThreadWindow:
    """A process's CPU split into its main thread (the event loop) and all its other threads (workers)."""

    pid: int
    _start: dict[int, int] = field(default_factory=dict)
    _t0: float = 0.0

    def start(self) -> None:
        self._start = thread_ticks(self.pid)
        self._t0 = time.monotonic()

    def stop(self) -> dict[str, float]:
        wall = time.monotonic() - self._t0
        now = thread_ticks(self.pid)
        main = now.get(self.pid, 0) - self._start.get(self.pid, 0)
        others = sum(t - self._start.get(tid, 0) for tid, t in now.items() if tid != self.pid)
        return {"loop_thread": round(main / CLK_TCK / wall, 4), "worker_threads": round(others / CLK_TCK / wall, 4)}


def machine_ticks() -> tuple[int, int]:
    """(busy, total) clock ticks of the whole machine since boot, from the first line of /proc/stat."""
    with open("/proc/stat") as f:
        parts = [int(x) for x in f.readline().split()[1:]]
    idle = parts[3] + (parts[4] if len(parts) > 4 else 0)  # idle + iowait
    total = sum(parts[:8])  # guest time is already inside user/nice
    return total - idle, total


def group_pids(pgid: int) -> list[int]:
    """Every live process of process group `pgid` (a Chromium and everything it forked)."""
    return [info.pid for info in in_group(pgid)]


def exe_name(info: ProcessInfo) -> str:
    # Chromium's children rewrite their command line into one space-separated string.
    argv0 = info.cmdline.split(b"\0", 1)[0].decode(errors="replace")
    return os.path.basename(argv0.split(" ", 1)[0])


def classify(processes: Iterable[ProcessInfo]) -> dict[str, list[int]]:
    """Split a service's descendants into chromium, xvfb and other (setpriv execs, so it never shows)."""
    out: dict[str, list[int]] = {"chromium": [], "xvfb": [], "other": []}
    for info in processes:
        name = exe_name(info)
        if "chrom" in name:
            out["chromium"].append(info.pid)
        elif name == "Xvfb":
            out["xvfb"].append(info.pid)
        elif name:
            out["other"].append(info.pid)
    return out


def _sum_kb(path: str, *names: str) -> int:
    """The sum of a /proc file's `Name:   N kB` lines for `names`; 0 when unreadable (the process is gone)."""
    total = 0
    try:
        with open(path) as f:
            for line in f:
                if line.startswith(names):
                    total += int(line.split()[1])
    except OSError:
        pass
    return total


def pss_kb(pid: int) -> int:
    """Proportional set size (kB), from /proc/<pid>/smaps_rollup."""
    return _sum_kb(f"/proc/{pid}/smaps_rollup", "Pss:")


def uss_kb(pid: int) -> int:
    """Unique set size (kB): Private_Clean + Private_Dirty, what ending the process would give back."""
    return _sum_kb(f"/proc/{pid}/smaps_rollup", "Private_Clean:", "Private_Dirty:")


def rss_kb(pid: int) -> int:
    return _sum_kb(f"/proc/{pid}/status", "VmRSS:")


PidSource = Callable[[], Iterable[int]]


@dataclass
class CpuWindow:
    """CPU of named process groups over one wall-clock window: start(), then stop() -> vCPU per group."""

    groups: Mapping[str, PidSource]
    _start: dict[str, dict[int, int]] = field(default_factory=dict)
    _t0: float = 0.0
    _m0: tuple[int, int] = (0, 0)

    def start(self) -> None:
        self._start = {name: self._read(src) for name, src in self.groups.items()}
        self._m0 = machine_ticks()
        self._t0 = time.monotonic()

    def stop(self) -> dict[str, float]:
        wall = time.monotonic() - self._t0
        m1 = machine_ticks()
        out: dict[str, float] = {}
        for name, src in self.groups.items():
            before = self._start.get(name, {})
            now = self._read(src)
            ticks = sum(t - before.get(pid, 0) for pid, t in now.items())
            out[name] = round(ticks / CLK_TCK / wall, 4)
        busy = m1[0] - self._m0[0]
        total = max(1, m1[1] - self._m0[1])
        out["machine"] = round(NCPU * busy / total, 3)  # vCPU busy on the whole machine
        measured = sum(v for k, v in out.items() if k != "machine")
        # What the rest of the machine did meanwhile (other engineers' tests): a noisy window shows here.
        out["others"] = round(max(0.0, out["machine"] - measured), 3)
        out["wall_s"] = round(wall, 2)
        return out

    @staticmethod
    def _read(src: PidSource) -> dict[int, int]:
        out = {}
        for pid in src():
            ticks = cpu_ticks(pid)
            if ticks is not None:
                out[pid] = ticks
        return out


def loadavg() -> list[float]:
    with open("/proc/loadavg") as f:
        return [float(x) for x in f.read().split()[:3]]
