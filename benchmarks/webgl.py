"""WebGL's cost: what turning it on (SwiftShader in Chromium's GPU process) costs a frame, beside `--disable-gpu`.

Two services one after another (never at the same time): FRAMESTREAM_WEBGL=on (the default) and off. In each, the
CPU of one watched frame (service, Chromium, Xvfb) over the window for a still page and an animated (CSS) page; with
WebGL on also a WebGL page drawing a rotating triangle every animation frame. dpr 2 (the default) first, then dpr 1.
"""

from __future__ import annotations

from functools import partial
from typing import Any

from benchmarks.common import Bench, start_service, stop_service
from benchmarks.cpu import measure_framestream, quietest, size_label

SIZES = [(1280, 800, 2), (1280, 800, 1)]
SIZES_QUICK = [(1280, 800, 2)]


async def run(bench: Bench) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    for setting in ("on", "off"):
        service = await start_service(bench.work, f"webgl-{setting}", {"FRAMESTREAM_WEBGL": setting})
        try:
            pages = {"still": "box.html", "animated": "animated.html"}
            if setting == "on":
                pages["webgl"] = "webgl_spin.html"
            for css_w, css_h, dpr in SIZES_QUICK if bench.quick else SIZES:
                for kind, page in pages.items():
                    label = size_label(css_w, css_h, dpr)
                    bench.say(f"webgl {setting}: {kind} {label}")
                    result = await quietest(bench, f"webgl {setting} {kind} {label}", partial(
                        measure_framestream, bench, service, bench.page(page), (css_w, css_h, dpr)))
                    rows.append({"webgl": setting, "page": kind, "size": label, "dpr": dpr, **result})
        finally:
            await stop_service(service)
    return rows


def table(rows: list[dict[str, Any]]) -> list[str]:
    lines = ["| WebGL | page | size | service vCPU | Chromium vCPU | Xvfb vCPU | fps |",
             "|---|---|---|---|---|---|---|"]
    for r in rows:
        cpu = r.get("cpu", {})
        lines.append(f"| {r['webgl']} | {r['page']} | {r['size']} | {cpu.get('service', '-')} | "
                     f"{cpu.get('chromium', '-')} | {cpu.get('xvfb', '-')} | {r.get('stream', {}).get('fps', '-')} |")
    return lines
