"""Section slowlink (issue 18): what a viewer gets over a limited link, each case in a network namespace of its own.

    .venv/bin/python -m benchmarks.run --only slowlink      # needs root (unshare -n, tc), about 5 minutes

Every case runs the service, its browser and the viewers inside `unshare -n` with only `lo` (tests/netns), so
nothing leaves loopback. The page is benchmarks/pages/scroll_fast.html (text scrolling 3 px a frame) at
1280x800 dpr 2 (2560x1600 encoded), watched for `WINDOW_S` after `WARM_S`:

- `1mbit`, `3mbit`, `10mbit`: every packet on lo through a token bucket (tc tbf, burst 16 kB, latency 300 ms);
- `unlimited`: the same namespace without a limit, the reference;
- `fast beside slow`: two viewers of the same frame, only the slow one's port limited to 1 Mbit/s (htb + u32);
- `input 3mbit`: a driver's click to the picture showing it (tests/pages/clicker.html) through a 3 Mbit/s bucket.

Per viewer: delivered fps, kbit/s, keyframes, sequence gaps (pictures skipped for it, within one stream), how
many of its pictures came from the frame's light stream (framestream/media/light.py) and at what size, and
capture to receive (the service's capture time to the viewer's receipt, same machine). The targets are the
issue's.
"""

from __future__ import annotations

import asyncio
from typing import Any

from benchmarks import report
from benchmarks.common import Bench
from tests import netns

SIZE = [1280, 800, 2]
WINDOW_S = 15.0
WARM_S = 6.0
SLOW_PORT = 40123
STREAM_CASES = [("unlimited", [], None), ("1mbit", netns.tbf("1mbit"), 1000.0),
                ("3mbit", netns.tbf("3mbit"), 3000.0), ("10mbit", netns.tbf("10mbit"), 10000.0)]


def _stream(shape: list[str], viewers: list[dict[str, Any]], window: float) -> dict[str, Any]:
    return netns.run(shape, "tests.netns.slowlink", {"page": "scroll_fast.html", "size": SIZE, "seconds": window,
                                                     "warm": WARM_S, "viewers": viewers}, timeout=400)


async def run(bench: Bench) -> dict[str, Any]:
    reason = netns.missing()
    if reason is not None:
        raise RuntimeError(f"slowlink needs network namespaces: {reason}")
    window = WINDOW_S / 2 if bench.quick else WINDOW_S
    out: dict[str, Any] = {"size": f"{SIZE[0]}x{SIZE[1]}@{SIZE[2]}x", "page": "scroll_fast.html",
                           "window_s": window, "cases": {}}
    for name, shape, kbit in STREAM_CASES:
        bench.say(f"slowlink: {name}, {out['size']}, {window:g} s")
        result = await asyncio.to_thread(_stream, shape, [{"name": "viewer", "link_kbit": kbit}], window)
        out["cases"][name] = {"viewer": _brief(result["viewers"]["viewer"]), "frame": result["frame"]}
    bench.say("slowlink: a fast viewer beside a slow one (1 Mbit/s on the slow one's port only)")
    result = await asyncio.to_thread(_stream, netns.port_limit("1mbit", SLOW_PORT),
                                     [{"name": "slow", "port": SLOW_PORT, "link_kbit": 1000.0}, {"name": "fast"}],
                                     window)
    out["cases"]["beside"] = {"fast": _brief(result["viewers"]["fast"]), "slow": _brief(result["viewers"]["slow"]),
                              "frame": result["frame"]}
    bench.say("slowlink: input to picture for a driver over 3 Mbit/s")
    clicks = 15 if bench.quick else 40
    out["input_3mbit"] = await asyncio.to_thread(netns.run, netns.tbf("3mbit"), "benchmarks.slowlink_inside",
                                                 {"size": SIZE, "clicks": clicks}, 400)
    out["targets"] = targets(out)
    return out


def _brief(viewer: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in viewer.items() if k != "sequences"}


def _p(viewer: dict[str, Any], q: str) -> float | None:
    lat = viewer.get("capture_to_recv_ms")
    return None if lat is None else float(lat[q])


def targets(out: dict[str, Any]) -> list[dict[str, Any]]:
    cases = out["cases"]

    def row(name: str, value: str, target: str, met: bool) -> dict[str, Any]:
        return {"target": name, "value": value, "goal": target, "met": met}

    rows = []
    for case, p95_max, fps_min in (("1mbit", 500.0, 2.0), ("3mbit", 300.0, 15.0)):
        v = cases[case]["viewer"]
        p95 = _p(v, "p95")
        rows.append(row(f"scroll over {case}", f"p95 {p95} ms, {v['fps']} fps",
                        f"p95 <= {p95_max:g} ms, >= {fps_min:g} fps",
                        p95 is not None and p95 <= p95_max and v["fps"] >= fps_min))
    # "The same figures as an unlimited link": judged against the unlimited case measured in this run (a
    # loaded machine delivers fewer than 30 fps unlimited too).
    ref = cases["unlimited"]["viewer"]
    ref_p95 = _p(ref, "p95") or 0.0
    for case, who in (("10mbit", "viewer"), ("beside", "fast")):
        v = cases[case][who]
        p95 = _p(v, "p95")
        name = "scroll over 10mbit" if case == "10mbit" else "fast viewer beside a slow one"
        rows.append(row(name, f"{v['fps']} fps, {v['gaps']} gaps, p95 {p95} ms (unlimited: {ref['fps']} fps, "
                        f"p95 {ref_p95} ms)", "no gaps, fps and p95 as unlimited (within 10 %, +20 ms)",
                        v["gaps"] == 0 and v["fps"] >= 0.9 * ref["fps"] and p95 is not None
                        and p95 <= ref_p95 + 20))
    clicks = out["input_3mbit"]["input_to_picture_ms"]
    p50 = None if clicks is None else clicks["p50"]
    rows.append(row("input to picture over 3 Mbit/s", f"p50 {p50} ms", "p50 <= 150 ms", p50 is not None and p50 <= 150))
    return rows


def render(out: dict[str, Any]) -> str:
    lines = []
    rows = []
    for name, case in out["cases"].items():
        for who, v in case.items():
            if who == "frame":
                continue
            label = name if who == "viewer" else f"{name}: {who}"
            lat = v["capture_to_recv_ms"] or {}
            light = ", ".join(f"{w}x{h}" for w, h in v.get("light_sizes", [])) or "-"
            rows.append([label, v["fps"], v["kbps"], v["keyframes"], v["gaps"], v.get("light_pictures", 0), light,
                         lat.get("p50"), lat.get("p95"), lat.get("max"), v["longest_without_picture_s"],
                         case["frame"]["skips_in_window"]])
    lines.append(report.table(["link", "fps", "kbit/s", "keyframes", "gaps", "light pictures", "light size",
                               "capture->recv p50 ms", "p95 ms", "max ms", "longest without picture s", "skips"],
                              rows))
    clicks = out["input_3mbit"]
    lat = clicks["input_to_picture_ms"] or {}
    lines.append(f"input to picture over 3 Mbit/s ({clicks['size']}, {clicks['clicks']} clicks, {clicks['missed']} "
                 f"missed): p50 {lat.get('p50')} ms, p95 {lat.get('p95')} ms")
    lines.append(report.table(["target", "value", "goal", "met"],
                              [[t["target"], t["value"], t["goal"], "met" if t["met"] else "NOT met"]
                               for t in out["targets"]]))
    return "\n".join(lines)
