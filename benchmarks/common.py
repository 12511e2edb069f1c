"""What every benchmark section shares: the run's settings, the pages, and small helpers around the service.

The service is `tests.support.Service`: `python -m framestream serve` as a child process of the benchmark.
Its blocking HTTP helpers run in a thread (`asyncio.to_thread`) so the viewers' reading never stalls.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchmarks.procstat import CpuWindow, ThreadWindow, classify
from benchmarks.viewer import Viewer
from framestream.browser.proctable import descendants
from tests.support import PAGES as TEST_PAGES
from tests.support import Service, StreamClient, page_server

BENCH_PAGES = Path(__file__).resolve().parent / "pages"


@dataclass
class Timing:
    """Sampling windows (seconds) and counts; `--quick` shrinks them."""

    warm: float = 1.5
    window: float = 6.0
    idle_window: float = 6.0
    clicks: int = 50
    resume_cycles: int = 3
    reopen_cycles: int = 3
    fanout: tuple[int, ...] = (1, 10, 50)
    scale_frames: int = 6


@dataclass
class Bench:
    quick: bool
    timing: Timing
    tests_base: str  # http://127.0.0.1:P serving tests/pages
    bench_base: str  # http://127.0.0.1:Q serving benchmarks/pages
    work: Path  # scratch dir: service state, logs
    selkies: tuple[bool, str] = (False, "not checked")
    retries: int = 1  # CPU rows measured again when other processes were busy (see cpu.quietest)
    results: dict[str, Any] = field(default_factory=dict)
    log_lines: list[str] = field(default_factory=list)

    def page(self, name: str) -> str:
        if (BENCH_PAGES / name).exists():
            return f"{self.bench_base}/{name}"
        return f"{self.tests_base}/{name}"

    def say(self, text: str) -> None:
        line = f"[{time.strftime('%H:%M:%S')}] {text}"
        self.log_lines.append(line)
        print(line, file=sys.stderr, flush=True)


@contextlib.contextmanager
def pages() -> Iterator[tuple[str, str]]:
    with page_server(TEST_PAGES) as tests_base, page_server(BENCH_PAGES) as bench_base:
        yield tests_base, bench_base


@contextlib.contextmanager
def scratch() -> Iterator[Path]:
    path = Path(tempfile.mkdtemp(prefix="fs-bench-"))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


# Services this run started and has not stopped yet: `stop_all` ends them however the run ends.
RUNNING: list[Service] = []


async def start_service(work: Path, name: str, env: dict[str, str] | None = None) -> Service:
    service = Service(state_dir=work / name, env_extra=dict(env or {}))
    RUNNING.append(service)
    await asyncio.to_thread(service.start, 30.0)
    return service


async def stop_service(service: Service) -> None:
    await asyncio.to_thread(_stop, service)


def _stop(service: Service) -> None:
    if service.proc is not None:
        service.stop()
        service.kill_leftovers()  # nothing should be left; this only matters after a crash
    with contextlib.suppress(ValueError):
        RUNNING.remove(service)


def stop_all() -> None:
    for service in list(RUNNING):
        _stop(service)


async def create_frame(service: Service, url: str, width: int, height: int, dpr: int) -> str:
    status, body = await asyncio.to_thread(service.request, "POST", "/frames",
                                           {"url": url, "width": width, "height": height, "dpr": dpr})
    if status != 201:
        raise RuntimeError(f"POST /frames answered {status}: {body}")
    frame_id = str(body["id"])
    await service.wait_state_async(frame_id, "live", 60.0)
    return frame_id


async def delete_frame(service: Service, frame_id: str) -> None:
    await asyncio.to_thread(service.request, "DELETE", f"/frames/{frame_id}")


async def frame_state(service: Service, frame_id: str) -> str:
    status, body = await asyncio.to_thread(service.get, f"/frames/{frame_id}")
    return str(body.get("state")) if status == 200 else f"http {status}"


def service_pids(service: Service) -> dict[str, list[int]]:
    """The service process and its children by kind: chromium (every process), xvfb, other."""
    assert service.proc is not None
    kinds = classify(descendants(service.proc.pid))
    kinds["service"] = [service.proc.pid]
    return kinds


def cpu_window(service: Service, bench: Iterable[int] = ()) -> CpuWindow:
    """CPU of the service, its Chromiums, its Xvfbs and the benchmark (this process and any `bench` helpers)."""
    kinds = service_pids(service)
    ours = bench_pid() + list(bench)
    return CpuWindow({"service": lambda: kinds["service"], "chromium": lambda: kinds["chromium"],
                      "xvfb": lambda: kinds["xvfb"], "bench": lambda: ours})


async def sample_cpu(service: Service, window: CpuWindow, seconds: float) -> tuple[dict[str, float], int, int]:
    """vCPU of `window`'s groups and of the service's loop and worker threads over `seconds`, with the window's
    bounds in microseconds since the epoch (to pick the pictures received within it)."""
    assert service.proc is not None
    threads = ThreadWindow(service.proc.pid)
    t0 = time.time_ns() // 1000
    window.start()
    threads.start()
    await asyncio.sleep(seconds)
    cpu = window.stop()
    cpu.update(threads.stop())
    return cpu, t0, time.time_ns() // 1000


async def open_watchers(service: Service, frame_id: str, count: int, timeout: float = 30.0) -> list[Viewer]:
    """`count` new viewers of one frame, each reading in the background, once every one has had a keyframe."""
    viewers: list[Viewer] = []
    try:
        for _ in range(count):
            viewer = await Viewer.open(service)
            viewers.append(viewer)
            viewer.start_pump()
            await viewer.send({"type": "watch", "frame": frame_id})
        for viewer in viewers:
            await viewer.wait_keyframe(timeout)
    except BaseException:
        await close_viewers(viewers)
        raise
    return viewers


async def close_viewers(viewers: Iterable[Viewer]) -> None:
    """Close viewers and forget them (tests' class-wide list of open clients would keep every record alive)."""
    viewers = list(viewers)
    await asyncio.gather(*(v.close() for v in viewers))
    for viewer in viewers:
        with contextlib.suppress(ValueError):
            StreamClient.open_clients.remove(viewer)


def metrics(service: Service) -> dict[str, float]:
    """GET /metrics (Prometheus text) as {"name{labels}": value}; {} when the service has no such route."""
    import urllib.request

    try:
        with urllib.request.urlopen(f"{service.base}/metrics", timeout=10) as resp:
            text = resp.read().decode()
    except OSError:
        return {}
    out = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            name, _, value = line.rpartition(" ")
            with contextlib.suppress(ValueError):
                out[name] = float(value)
    return out


def metric_delta(before: dict[str, float], after: dict[str, float], prefix: str) -> float:
    return sum(v - before.get(k, 0.0) for k, v in after.items() if k.startswith(prefix))


def bench_pid() -> list[int]:
    return [os.getpid()]


def ratio(a: float | None, b: float | None) -> float | None:
    if a is None or b is None or b <= 0:
        return None
    return round(a / b, 3)
