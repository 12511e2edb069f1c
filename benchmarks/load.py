"""Sections 8 (load) and 9 (soak), issue 7: many viewers, a connection storm, and a long soak with churn.

- 100 viewers of one animated 1280x800 dpr 1 frame; six animated 640x400 dpr 1 frames with ten viewers each;
- a storm of 1,000 WebSocket connects and disconnects, half never sending `hello`, while one viewer watches;
- a soak (`--soak`, 600 s by default) with viewers joining and leaving, sampling `/metrics` for leaks.

Viewers count pictures from the 16-byte video header and never decode: decoding 100 streams in Python on two
cores would make this process the bottleneck. It still shares the cores with the service, so its own CPU (with
the /healthz probe's) is reported as `bench`. /healthz is timed from a separate process every 100 ms, so the
latency is the service's and not the wait for this process's busy event loop.

    .venv/bin/python -m benchmarks.load probe URL FILE PERIOD   # the probe (run.py starts it; not for people)
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import random
import signal
import statistics
import sys
import time
import urllib.request
from collections import Counter
from collections.abc import AsyncIterator, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import websockets

from benchmarks.common import (
    Bench,
    close_viewers,
    cpu_window,
    create_frame,
    delete_frame,
    frame_state,
    metric_delta,
    metrics,
    open_watchers,
)
from benchmarks.procstat import loadavg, rss_kb
from benchmarks.viewer import Rec, Viewer, percentiles, window_stats
from framestream.core.wire import CLOSE_HELLO_TIMEOUT, FLAG_KEYFRAME, unpack_video_header
from tests.support import Service

ROOT = Path(__file__).resolve().parent.parent
PAGE = "animated.html"
BIG = (1280, 800, 1)
SMALL = (640, 400, 1)
VIEWERS = 100
FRAMES, PER_FRAME = 6, 10
STORM, STORM_CONCURRENCY = 1000, 64  # 64 at a time stays far below the service's 256-connection cap
HELLO_TIMEOUT_S = 5.0
# The load service: frames never pause between parts, so task and fd counts compare like with like. The soak's
# pause after 5 s (the default), so one of its frames pauses and resumes as viewers come and go.
# Every connection of the storm and the soak comes from 127.0.0.1, as many as 64 waiting for hello at once: the
# caps on sockets waiting for hello (8 an address, 32 in all) would close the oldest of them, so they are raised.
PENDING_ENV = {"FRAMESTREAM_MAX_PENDING_CONNECTIONS": "256", "FRAMESTREAM_MAX_PENDING_PER_ADDRESS": "256"}
SERVICE_ENV = {"FRAMESTREAM_HELLO_TIMEOUT_S": str(HELLO_TIMEOUT_S), "FRAME_IDLE_PAUSE_S": "600", **PENDING_ENV}
SOAK_ENV = {"FRAMESTREAM_HELLO_TIMEOUT_S": str(HELLO_TIMEOUT_S), "FRAME_IDLE_PAUSE_S": "5", **PENDING_ENV}
HEALTHZ_PERIOD_S = 0.1
STARVED = 0.5  # a viewer below half the median fps of its run is starved
GAUGES = ("framestream_tasks", "process_open_fds", "process_resident_memory_bytes", "framestream_connections")
TASK_SLACK, FD_SLACK = 5, 5  # "back to baseline": within this many of it once the viewers left
RSS_GROWTH_MB = 20.0  # over the last 80 % of the soak


def now_us() -> int:
    return time.time_ns() // 1000


def spread(values: Sequence[float]) -> dict[str, float] | None:
    if not values:
        return None
    return {"min": round(min(values), 2), "median": round(statistics.median(values), 2),
            "max": round(max(values), 2)}


def longest_gap(recs: list[Rec], t0_us: int, t1_us: int) -> tuple[float, int]:
    """The longest stretch of [t0, t1) without a picture (a starved viewer shows it even if its mean is fine):
    (milliseconds, when it began in µs)."""
    times = [t0_us, *(r.recv_us for r in recs if t0_us <= r.recv_us < t1_us), t1_us]
    gap, start = max((b - a, a) for a, b in itertools.pairwise(times))
    return round(gap / 1000, 1), start


def max_gap_ms(recs: list[Rec], t0_us: int, t1_us: int) -> float:
    return longest_gap(recs, t0_us, t1_us)[0]


def rss_mb(service: Service) -> float:
    assert service.proc is not None
    return round(rss_kb(service.proc.pid) / 1024, 1)


# -- /healthz, from a process of its own -------------------------------------------------------------------


def probe(url: str, out: Path, period: float) -> None:
    """Time `GET url` every `period` s until killed: one line per request, `wall_s ms ok` (a fresh connection
    each time, as a liveness probe makes)."""
    with open(out, "a", buffering=1) as f:
        while True:
            wall, t0 = time.time(), time.perf_counter()
            try:
                with urllib.request.urlopen(url, timeout=5) as resp:
                    resp.read()
                    ok = resp.status == 200
            except OSError:
                ok = False
            ms = (time.perf_counter() - t0) * 1000
            f.write(f"{wall:.3f} {ms:.2f} {int(ok)}\n")
            time.sleep(max(0.0, period - (time.perf_counter() - t0)))


@dataclass
class HealthProbe:
    proc: asyncio.subprocess.Process
    path: Path

    def samples(self, t0: float = 0.0, t1: float = float("inf")) -> list[tuple[float, float, bool]]:
        out = []
        for line in self.path.read_text().splitlines():
            parts = line.split()
            if len(parts) == 3 and t0 <= float(parts[0]) < t1:
                out.append((float(parts[0]), float(parts[1]), parts[2] == "1"))
        return out

    def stats(self, t0: float, t1: float, phases: Phases | None = None) -> dict[str, Any]:
        """Latency percentiles (ms) of the answered requests in [t0, t1), how many failed, and the slowest few
        (seconds after t0, ms, and the phase of the run they fell in)."""
        samples = self.samples(t0, t1)
        ok = [ms for _, ms, good in samples if good]
        slowest = sorted(samples, key=lambda s: -s[1])[:3]
        return {**(percentiles(ok) or {"n": 0}), "failed": len(samples) - len(ok),
                "slowest": [{"at_s": round(t - t0, 1), "ms": ms, "during": phases.at(t) if phases else ""}
                            for t, ms, _ in slowest]}


@dataclass
class Phases:
    """What a run was doing when (so a slow /healthz can be put down to, say, a browser starting)."""

    marks: list[tuple[float, str]] = field(default_factory=list)

    def __call__(self, name: str) -> None:
        self.marks.append((time.time(), name))

    def at(self, t: float) -> str:
        return next((name for start, name in reversed(self.marks) if start <= t), "")

    def relative(self) -> dict[str, float]:
        t0 = self.marks[0][0] if self.marks else 0.0
        return {name: round(t - t0, 1) for t, name in self.marks}


@contextlib.asynccontextmanager
async def healthz_probe(bench: Bench, service: Service, name: str) -> AsyncIterator[HealthProbe]:
    path = bench.work / f"healthz-{name}.log"
    path.write_text("")
    proc = await asyncio.create_subprocess_exec(sys.executable, "-m", "benchmarks.load", "probe",
                                                f"{service.base}/healthz", str(path), str(HEALTHZ_PERIOD_S), cwd=ROOT)
    try:
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:  # it imports for a second before its first request
            if path.read_text():
                break
            await asyncio.sleep(0.1)
        yield HealthProbe(proc, path)
    finally:
        proc.send_signal(signal.SIGTERM)
        await asyncio.wait_for(proc.wait(), 10)


# -- /metrics gauges ---------------------------------------------------------------------------------------


async def gauges(service: Service) -> dict[str, float]:
    values = await asyncio.to_thread(metrics, service)
    return {g: int(values[g]) if values[g].is_integer() else values[g] for g in GAUGES if g in values}


@dataclass
class GaugeLog:
    """`/metrics` gauges sampled every `period` s in the background: rows of (wall time, gauges)."""

    service: Service
    period: float
    rows: list[tuple[float, dict[str, float]]] = field(default_factory=list)
    _task: asyncio.Task[None] | None = None

    def start(self) -> None:
        self._task = asyncio.create_task(self._run())

    async def _run(self) -> None:
        while True:
            self.rows.append((time.time(), await gauges(self.service)))
            await asyncio.sleep(self.period)

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)

    def series(self, gauge: str, t0: float = 0.0, t1: float = float("inf")) -> list[float]:
        return [g[gauge] for t, g in self.rows if t0 <= t < t1 and gauge in g]

    def median(self, gauge: str, t0: float = 0.0, t1: float = float("inf")) -> float | None:
        values = self.series(gauge, t0, t1)
        return statistics.median(values) if values else None


@dataclass
class StateLog:
    """A frame's state polled every `period` s in the background: (wall time, state) at each change."""

    service: Service
    frame_id: str
    period: float = 0.5
    changes: list[tuple[float, str]] = field(default_factory=list)
    _task: asyncio.Task[None] | None = None

    def start(self) -> None:
        self._task = asyncio.create_task(self._run())

    async def _run(self) -> None:
        while True:
            state = await frame_state(self.service, self.frame_id)
            if not self.changes or self.changes[-1][1] != state:
                self.changes.append((time.time(), state))
            await asyncio.sleep(self.period)

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)


async def settle(service: Service, connections: float, limit: float = 30.0) -> tuple[float, dict[str, float]]:
    """Wait until the service has `connections` open again; (seconds it took, gauges then)."""
    t0 = time.monotonic()
    now = await gauges(service)
    while now.get("framestream_connections", -1) > connections and time.monotonic() - t0 < limit:
        await asyncio.sleep(0.25)
        now = await gauges(service)
    await asyncio.sleep(1.0)  # a closed connection's tasks end just after it leaves the set
    return round(time.monotonic() - t0, 2), await gauges(service)


# -- many viewers ------------------------------------------------------------------------------------------


async def watch_window(service: Service, viewers: list[Viewer], probe: HealthProbe, seconds: float,
                       phases: Phases) -> dict[str, Any]:
    """Per-viewer delivered fps and longest gap, CPU by process kind and encoded pictures over one window."""
    window = cpu_window(service, [probe.proc.pid])
    before = await asyncio.to_thread(metrics, service)
    phases("measuring")
    t0 = now_us()
    window.start()
    await asyncio.sleep(seconds)
    cpu = window.stop()
    t1 = now_us()
    phases("after the window")
    after = await asyncio.to_thread(metrics, service)
    per = [window_stats(v.recs, t0, t1) for v in viewers]
    fps = [p["fps"] for p in per]
    median = statistics.median(fps)
    drop_free = [p["drop_free"] for p in per if p["drop_free"] is not None]
    wall = (t1 - t0) / 1e6
    encoded = {k.split('"')[1]: round((v - before.get(k, 0.0)) / wall, 2) for k, v in after.items()
               if k.startswith("framestream_pictures_total{")}
    return {
        "window_s": round(wall, 1), "cpu": cpu, "rss_mb": rss_mb(service),
        "fps": spread(fps), "fps_each": fps, "starved": sum(1 for f in fps if f < STARVED * median),
        "drop_free_min": min(drop_free) if drop_free else None,
        "max_gap_ms": spread([max_gap_ms(v.recs, t0, t1) for v in viewers]),
        "capture_to_recv_p50_ms": spread([p["capture_to_recv_ms"]["p50"] for p in per if p["capture_to_recv_ms"]]),
        "encoded_fps": spread(list(encoded.values())), "encoded_fps_each": encoded,
        "dropped": metric_delta(before, after, "framestream_dropped_pictures_total"),
        "healthz_window_ms": probe.stats(t0 / 1e6, t1 / 1e6, phases),
    }


def window_seconds(bench: Bench) -> float:
    return bench.timing.window if bench.quick else 15.0


async def viewers_100(bench: Bench, service: Service) -> dict[str, Any]:
    css_w, css_h, dpr = BIG
    load0, phases = loadavg(), Phases()
    async with healthz_probe(bench, service, "viewers_100") as probe:
        phases("starting the frame")
        frame_id = await create_frame(service, bench.page(PAGE), css_w, css_h, dpr)
        rss_before = rss_mb(service)
        viewers: list[Viewer] = []
        try:
            phases("viewers joining")
            viewers = await open_watchers(service, frame_id, VIEWERS)
            bench.say(f"load: {VIEWERS} viewers of one animated {css_w}x{css_h} frame")
            phases("warming up")
            await asyncio.sleep(bench.timing.warm)
            window = await watch_window(service, viewers, probe, window_seconds(bench), phases)
        finally:
            phases("viewers leaving, frame deleted")
            await close_viewers(viewers)
            await delete_frame(service, frame_id)
        phases("end")
    return {"size": f"{css_w}x{css_h}@{dpr}x", "frames": 1, "viewers": VIEWERS, "rss_mb_before": rss_before,
            **window, "healthz_ms": probe.stats(phases.marks[0][0], phases.marks[-1][0], phases),
            "phases_s": phases.relative(), "loadavg": [load0, loadavg()]}


async def six_by_ten(bench: Bench, service: Service) -> dict[str, Any]:
    css_w, css_h, dpr = SMALL
    load0, phases = loadavg(), Phases()
    frames: list[str] = []
    viewers: list[Viewer] = []
    async with healthz_probe(bench, service, "six_by_ten") as probe:
        try:
            phases("starting the frames")
            for _ in range(FRAMES):
                frames.append(await create_frame(service, bench.page(PAGE), css_w, css_h, dpr))
            rss_before = rss_mb(service)
            phases("viewers joining")
            for frame_id in frames:
                viewers += await open_watchers(service, frame_id, PER_FRAME)
            bench.say(f"load: {FRAMES} animated {css_w}x{css_h} frames, {PER_FRAME} viewers each")
            phases("warming up")
            await asyncio.sleep(bench.timing.warm)
            window = await watch_window(service, viewers, probe, window_seconds(bench), phases)
        finally:
            phases("viewers leaving, frames deleted")
            await close_viewers(viewers)
            for frame_id in frames:
                await delete_frame(service, frame_id)
        phases("end")
    fps = window["fps_each"]
    per_frame = [spread(fps[i * PER_FRAME:(i + 1) * PER_FRAME]) for i in range(FRAMES)]
    return {"size": f"{css_w}x{css_h}@{dpr}x", "frames": FRAMES, "viewers": FRAMES * PER_FRAME,
            "rss_mb_before": rss_before, **window, "fps_per_frame": per_frame,
            "healthz_ms": probe.stats(phases.marks[0][0], phases.marks[-1][0], phases),
            "phases_s": phases.relative(), "loadavg": [load0, loadavg()]}


# -- one connection of a storm or a soak -------------------------------------------------------------------


@dataclass(frozen=True)
class Plan:
    """What one connection does. Silent kinds never send hello: `silent_close` closes at once, `silent_wait`
    after `wait_s`, `silent_timeout` waits for the service's 4408. `hello` watches `frame` until its first
    picture, reads for `stay_s` more, then closes (or drops the TCP connection when `abort`)."""

    kind: str
    frame: str = ""
    wait_s: float = 0.0
    stay_s: float = 0.0
    abort: bool = False


@dataclass
class Outcome:
    kind: str
    frame: str
    result: str = "ok"  # or what went wrong
    at: float = field(default_factory=time.time)
    welcome_ms: float | None = None
    picture_ms: float | None = None  # watch -> first picture


async def visit(service: Service, plan: Plan) -> Outcome:
    out = Outcome(plan.kind, plan.frame)
    try:
        async with websockets.connect(service.ws_url, max_size=None, open_timeout=15, close_timeout=3) as ws:
            if plan.kind == "hello":
                await _watch(ws, service, plan, out)
            elif plan.kind == "silent_wait":
                out.result = await _silence(ws, plan.wait_s, None)
            elif plan.kind == "silent_timeout":
                out.result = await _silence(ws, HELLO_TIMEOUT_S + 5, CLOSE_HELLO_TIMEOUT)
    except (OSError, TimeoutError, websockets.WebSocketException) as exc:
        out.result = type(exc).__name__
    except Exception as exc:  # counted as an error of this connection, never the end of the run
        out.result = f"{type(exc).__name__}: {exc}"[:120]
    return out


async def _silence(ws: websockets.ClientConnection, seconds: float, expect: int | None) -> str:
    """Send nothing for `seconds`: ok when nothing arrives (`expect` None) or the service closes with `expect`."""
    try:
        msg = await asyncio.wait_for(ws.recv(), seconds)
    except TimeoutError:
        return "ok" if expect is None else "no close in time"
    except websockets.ConnectionClosed as exc:
        code = exc.rcvd.code if exc.rcvd else None
        return "ok" if code == expect else f"closed {code}"
    return f"unexpected {'text' if isinstance(msg, str) else 'binary'} message"


async def _watch(ws: websockets.ClientConnection, service: Service, plan: Plan, out: Outcome) -> None:
    t0 = time.perf_counter()
    await ws.send(json.dumps({"type": "hello", "token": service.token("view")}))
    first = json.loads(await asyncio.wait_for(ws.recv(), 10))
    if first.get("type") != "welcome":
        out.result = f"got {first.get('type')}"
        return
    t1 = time.perf_counter()
    out.welcome_ms = round((t1 - t0) * 1000, 2)
    await ws.send(json.dumps({"type": "watch", "frame": plan.frame}))
    configured = False
    while True:
        raw = await asyncio.wait_for(ws.recv(), max(0.1, 15 - (time.perf_counter() - t1)))
        if isinstance(raw, str):
            msg = json.loads(raw)
            configured = configured or msg.get("type") == "video-config"
            if msg.get("type") == "error":
                out.result = f"error {msg.get('code')}"
                return
        elif configured:
            out.picture_ms = round((time.perf_counter() - t1) * 1000, 2)
            if not unpack_video_header(raw).flags & FLAG_KEYFRAME:
                out.result = "first picture not a keyframe"
            break
        else:
            out.result = "picture before video-config"
            return
    await _stay(ws, plan)


async def _stay(ws: websockets.ClientConnection, plan: Plan) -> None:
    deadline = time.monotonic() + plan.stay_s
    with contextlib.suppress(TimeoutError):
        while (left := deadline - time.monotonic()) > 0:
            await asyncio.wait_for(ws.recv(), left)
    if plan.abort:
        ws.transport.abort()  # gone without a close handshake, as a tab killed or a network lost


def tally(outcomes: Iterable[Outcome]) -> dict[str, dict[str, Any]]:
    """Per kind: how many, how many got the expected answers, and what the others got."""
    out: dict[str, dict[str, Any]] = {}
    for o in outcomes:
        row = out.setdefault(o.kind, {"n": 0, "expected": 0, "unexpected": Counter()})
        row["n"] += 1
        if o.result == "ok":
            row["expected"] += 1
        else:
            row["unexpected"][o.result] += 1
    for row in out.values():
        row["unexpected"] = dict(row["unexpected"])
    return out


# -- the storm ---------------------------------------------------------------------------------------------


def storm_plan(index: int, frame: str, rng: random.Random) -> Plan:
    """Even indices say hello and watch; of the silent half, 1 in 5 waits for 4408, 2 close at once, 2 wait."""
    if index % 2 == 0:
        return Plan("hello", frame)
    kind = ("silent_timeout", "silent_close", "silent_close", "silent_wait", "silent_wait")[index // 2 % 5]
    return Plan(kind, frame, wait_s=rng.uniform(0.1, 1.5))


async def storm(bench: Bench, service: Service) -> dict[str, Any]:
    css_w, css_h, dpr = SMALL
    rng = random.Random(7)
    load0 = loadavg()
    frame_id = await create_frame(service, bench.page(PAGE), css_w, css_h, dpr)
    watcher: list[Viewer] = []
    log = GaugeLog(service, 0.5)
    try:
        async with healthz_probe(bench, service, "storm") as probe:
            empty = await gauges(service)
            watcher = await open_watchers(service, frame_id, 1)
            await asyncio.sleep(bench.timing.warm + 1.0)
            baseline = await gauges(service)
            before_t0 = now_us()
            await asyncio.sleep(3.0)
            before = window_stats(watcher[0].recs, before_t0, now_us())
            bench.say(f"load: storm of {STORM} connections, {STORM_CONCURRENCY} at a time")
            log.start()
            window = cpu_window(service, [probe.proc.pid])
            gate = asyncio.Semaphore(STORM_CONCURRENCY)

            async def one(plan: Plan) -> Outcome:
                async with gate:
                    return await visit(service, plan)

            t0_us = now_us()
            window.start()
            outcomes = await asyncio.gather(*(one(storm_plan(i, frame_id, rng)) for i in range(STORM)))
            cpu = window.stop()
            t1_us = now_us()
            settle_s, after = await settle(service, baseline.get("framestream_connections", 1))
            await log.stop()
            during = window_stats(watcher[0].recs, t0_us, t1_us)
            gap = max_gap_ms(watcher[0].recs, t0_us, t1_us)
            healthz = probe.stats(t0_us / 1e6, t1_us / 1e6)
        await close_viewers(watcher)
        watcher = []
        _, left = await settle(service, 0)
    finally:
        await log.stop()
        await close_viewers(watcher)
        await delete_frame(service, frame_id)
    hello = [o for o in outcomes if o.kind == "hello"]
    peak = {g: max(log.series(g), default=None) for g in GAUGES}
    return {
        "connections": STORM, "concurrency": STORM_CONCURRENCY, "size": f"{css_w}x{css_h}@{dpr}x",
        "seconds": round((t1_us - t0_us) / 1e6, 2), "per_second": round(STORM / ((t1_us - t0_us) / 1e6), 1),
        "kinds": tally(outcomes), "unexpected": sum(1 for o in outcomes if o.result != "ok"),
        "welcome_ms": percentiles([o.welcome_ms for o in hello if o.welcome_ms is not None]),
        "first_picture_ms": percentiles([o.picture_ms for o in hello if o.picture_ms is not None]),
        "cpu": cpu, "healthz_ms": healthz,
        "viewer": {"fps_before": before["fps"], "fps_during": during["fps"], "drop_free": during["drop_free"],
                   "max_gap_ms": gap},
        "gauges": {"no_viewer": empty, "baseline": baseline, "peak": peak, "after": after, "settle_s": settle_s,
                   "all_left": left},
        "checks": storm_checks(empty, baseline, after, left),
        "loadavg": [load0, loadavg()],
    }


def storm_checks(empty: dict[str, float], baseline: dict[str, float], after: dict[str, float],
                 left: dict[str, float]) -> list[dict[str, Any]]:
    """After the storm: back to the one watcher's figures; once it left too, back to the no-viewer figures."""
    return [
        check("connections after the storm = the one watcher", after.get("framestream_connections"),
              baseline.get("framestream_connections"), 0),
        check("tasks after the storm", after.get("framestream_tasks"), baseline.get("framestream_tasks"),
              TASK_SLACK),
        check("fds after the storm", after.get("process_open_fds"), baseline.get("process_open_fds"), FD_SLACK),
        check("connections once the watcher left", left.get("framestream_connections"), 0, 0),
        check("tasks once the watcher left", left.get("framestream_tasks"), empty.get("framestream_tasks"),
              TASK_SLACK),
        check("fds once the watcher left", left.get("process_open_fds"), empty.get("process_open_fds"), FD_SLACK),
    ]


def check(name: str, value: float | None, base: float | None, slack: float) -> dict[str, Any]:
    ok = value is not None and base is not None and value <= base + slack
    return {"check": name, "value": value, "bound": None if base is None else f"<= {base:g} + {slack:g}", "ok": ok}


# -- the soak ----------------------------------------------------------------------------------------------

SOAK_ANCHORED = 2  # frames with one viewer throughout (their fps is watched for the whole run)
SOAK_ARRIVAL_S = 0.5  # a new connection this often...
SOAK_MAX_ACTIVE = 30  # ...while fewer than this many are open
SOAK_STAY_S = (1.0, 20.0)


def soak_plan(frames: list[str], rng: random.Random) -> Plan:
    """Mostly viewers of the anchored frames; 1 in 20 watches the third frame, which pauses and resumes as they
    come and go; 1 in 10 never says hello; a quarter of the viewers drop the TCP connection instead of closing."""
    roll = rng.random()
    if roll < 0.05:
        return Plan("silent_timeout")
    if roll < 0.10:
        return Plan("silent_close")
    frame = frames[-1] if rng.random() < 0.05 else rng.choice(frames[:-1])
    return Plan("hello", frame, stay_s=rng.uniform(*SOAK_STAY_S), abort=rng.random() < 0.25)


async def churn(service: Service, frames: list[str], seconds: float, rng: random.Random) -> list[Outcome]:
    """Connections arriving every SOAK_ARRIVAL_S for `seconds`, each doing its plan; returns once all ended."""
    active: set[asyncio.Task[Outcome]] = set()
    done: list[asyncio.Task[Outcome]] = []

    def ended(task: asyncio.Task[Outcome]) -> None:
        active.discard(task)
        done.append(task)

    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if len(active) < SOAK_MAX_ACTIVE:
            task = asyncio.create_task(visit(service, soak_plan(frames, rng)))
            active.add(task)
            task.add_done_callback(ended)
        await asyncio.sleep(SOAK_ARRIVAL_S)
    await asyncio.gather(*active)
    return [t.result() for t in done]


async def wait_paused(service: Service, frame_id: str, limit: float = 60.0) -> None:
    t0 = time.monotonic()
    while time.monotonic() - t0 < limit:
        if await frame_state(service, frame_id) == "paused":
            return
        await asyncio.sleep(0.5)
    raise RuntimeError(f"frame {frame_id} did not pause within {limit:g} s")


async def soak(bench: Bench, service: Service, seconds: float) -> dict[str, Any]:
    css_w, css_h, dpr = SMALL
    rng = random.Random(7)
    load0 = loadavg()
    frames: list[str] = []
    anchors: list[Viewer] = []
    log = GaugeLog(service, 2.0)
    states: StateLog | None = None
    try:
        async with healthz_probe(bench, service, "soak") as probe:
            for _ in range(SOAK_ANCHORED + 1):
                frames.append(await create_frame(service, bench.page(PAGE), css_w, css_h, dpr))
            for frame_id in frames[:SOAK_ANCHORED]:
                anchors += await open_watchers(service, frame_id, 1)
            await wait_paused(service, frames[-1])
            states = StateLog(service, frames[-1])
            states.start()
            log.start()
            await asyncio.sleep(10.0)
            bench.say(f"soak: {seconds:g} s of viewers joining and leaving")
            window = cpu_window(service, [probe.proc.pid])
            t0, t0_us = time.time(), now_us()
            window.start()
            outcomes = await churn(service, frames, seconds, rng)
            cpu = window.stop()
            t1, t1_us = time.time(), now_us()
            settle_s, _ = await settle(service, len(anchors))
            await wait_paused(service, frames[-1])
            t_end = time.time()
            await asyncio.sleep(10.0)
            await log.stop()
            healthz = probe.stats(t0, t1)
    finally:
        await log.stop()
        if states is not None:
            await states.stop()
        await close_viewers(anchors)
        for frame_id in frames:
            await delete_frame(service, frame_id)
    hello = [o for o in outcomes if o.kind == "hello"]
    figures = soak_figures(log, t0, t1, t_end)
    gaps = [longest_gap(a.recs, t0_us, t1_us) for a in anchors]
    return {
        "seconds": seconds, "size": f"{css_w}x{css_h}@{dpr}x", "frames": len(frames), "anchors": len(anchors),
        "visits": tally(outcomes), "unexpected": sum(1 for o in outcomes if o.result != "ok"),
        "first_picture_ms": percentiles([o.picture_ms for o in hello if o.picture_ms is not None]),
        "anchor_fps": spread([window_stats(a.recs, t0_us, t1_us)["fps"] for a in anchors]),
        "anchor_max_gap_ms": max(g[0] for g in gaps),
        "anchor_gaps": [{"ms": ms, "at_s": round(at / 1e6 - t0, 1)} for ms, at in gaps],
        # the pausing frame's states as they changed, to set beside slow moments
        "third_frame_states": [{"at_s": round(t - t0, 1), "state": state} for t, state in states.changes],
        "cpu": cpu, "healthz_ms": healthz, "settle_s": settle_s, "gauges": figures["gauges"],
        "rss_growth_last80_mb": figures["rss_growth_last80_mb"], "checks": figures["checks"],
        "samples": [[round(t - t0, 1), *(g.get(k) for k in GAUGES)] for t, g in log.rows],
        "loadavg": [load0, loadavg()],
    }


def soak_figures(log: GaugeLog, t0: float, t1: float, t_end: float) -> dict[str, Any]:
    """Baseline (before the churn), start/end/max, first- and last-minute medians, and the checks."""
    span = min(60.0, (t1 - t0) / 10)  # "a minute", shorter for a short run so the two never overlap
    out: dict[str, dict[str, float | None]] = {}
    for g in GAUGES:
        churned = log.series(g, t0, t1)
        first, last = log.median(g, t0, t0 + span), log.median(g, t1 - span, t1)
        out[g] = {"baseline": log.median(g, 0, t0), "start": churned[0] if churned else None,
                  "end": log.median(g, t_end), "max": max(log.series(g), default=None),
                  "first_median": first, "last_median": last,
                  "growth": None if first is None or last is None else last - first}
    rss = "process_resident_memory_bytes"
    at20 = t0 + 0.2 * (t1 - t0)
    early, late = log.median(rss, at20, at20 + span), log.median(rss, t1 - span, t1)
    growth = None if early is None or late is None else round((late - early) / 2**20, 1)

    def back(gauge: str, slack: float, name: str) -> dict[str, Any]:
        return check(name, out[gauge]["end"], out[gauge]["baseline"], slack)

    checks = [back("framestream_tasks", TASK_SLACK, "tasks once the churn ended"),
              back("process_open_fds", FD_SLACK, "fds once the churn ended"),
              back("framestream_connections", 0, "connections once the churn ended"),
              {"check": "service RSS growth over the last 80 %", "value": growth, "bound": f"< {RSS_GROWTH_MB:g} MB",
               "ok": growth is not None and growth < RSS_GROWTH_MB}]
    return {"gauges": out, "rss_growth_last80_mb": growth, "checks": checks}


if __name__ == "__main__":
    if sys.argv[1:2] == ["probe"] and len(sys.argv) == 5:
        probe(sys.argv[2], Path(sys.argv[3]), float(sys.argv[4]))
    else:
        sys.exit(__doc__)
