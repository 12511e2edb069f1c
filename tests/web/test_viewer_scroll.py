"""The viewer (web/) with patches and copies, in real browsers (headless Chromium, and Firefox ESR over WebDriver
BiDi) against the real service: the page scrolled by real wheel input (a driver's POST /frames/{id}/input) goes
out as patch messages whose first rectangle is a copy (a move of what the viewer already shows) and a PNG of the
strip that came into view, and the canvas then shows the scrolled page: every pixel a PNG put there exact, also
after later copies moved it; what the copies moved of the H.264 picture a bit-exact move of what the canvas showed
before the wheel, and at its right place on the page within H.264's tolerance.

Frame CSS 480x240 at dpr 2 (960x480 pixels), a fresh one per test, on tests/web/pages/scroll.html: a fixed
28 px header over 90 rows of their own colour and text, no scrollbar. A wheel notch is 53 CSS pixels (Chromium's
on Linux, framestream/browser/xinput.py), so the strip each notch exposes, 106 x 960 pixels, is within
PatchRule's max_area (128 Ki pixels) and goes as a PNG; the notches go one at a time (each once the picture
after the one before is drawn), as a person turns a wheel. A larger step in one picture (100 CSS pixels: a
200-row strip) goes as H.264 instead: its strip is over max_area (media/sender.py `_scrolled`, `allows_scroll`).

How the test knows what was drawn where: besides the decoder's trace (`_debugTrace`: every message, and every
entry drawn, patch or video), a hook on `CanvasRenderingContext2D.prototype.drawImage` records every draw into
the frame's canvas: a copy (the canvas drawn onto itself, with its source and destination), a PNG rectangle (an
ImageBitmap at x, y) or a video picture. Replaying those gives each canvas pixel's origin (`replay`).
"""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

import numpy as np
import pytest

from tests.fixtures import service_fixture
from tests.support import Service
from tests.web.browser import BrowserTab, Page, info
from tests.web.firefox import Tab
from tests.web.test_viewer_patches import canvas_rgb, open_patch_viewer, screenshot

# One event loop, one service, one Chromium and one Firefox for the module; a fresh frame for each test.
pytestmark = [pytest.mark.integration, pytest.mark.asyncio(loop_scope="module")]

CSS_W, CSS_H, DPR = 480, 240, 2
HEADER_ROWS = 28 * DPR  # the page's fixed header bar, in the picture's rows
NOTCH = 53  # CSS pixels a wheel notch scrolls in Chromium on Linux
NOTCHES = 3

service = service_fixture(scope="module", pages="web_pages", timeout=60)

# Every drawImage into the frame's canvas, in order; `at`: the index the decoder's trace entry for that drawn
# entry gets (it traces an entry once drawn). Installed after open_patch_viewer, which starts window.fsTrace; the
# decoder's context looks drawImage up on each call, so the hook sees its draws from now on.
JS_DRAW_HOOK = """
(() => {{
  window.fsDraws = [];
  const frame = {frame};
  const draw = CanvasRenderingContext2D.prototype.drawImage;
  CanvasRenderingContext2D.prototype.drawImage = function (src, ...a) {{
    const c = this.canvas;
    if (c && c.dataset && c.dataset.frame === frame) {{
      const at = window.fsTrace ? window.fsTrace.length : -1;
      if (src === c) {{
        window.fsDraws.push({{ kind: 'copy', sx: a[0], sy: a[1], w: a[2], h: a[3], x: a[4], y: a[5],
          dw: a[6], dh: a[7], at }});
      }} else if (typeof VideoFrame !== 'undefined' && src instanceof VideoFrame) {{
        window.fsDraws.push({{ kind: 'video', at }});
      }} else {{
        window.fsDraws.push({{ kind: 'png', x: a[0], y: a[1], w: src.width, h: src.height, n: a.length, at }});
      }}
    }}
    return draw.call(this, src, ...a);
  }};
  return true;
}})()
"""

# Where each canvas pixel's content came from: the video picture where it was drawn, the video picture moved by
# copies, a PNG where it was drawn, a PNG moved by copies.
VIDEO, MOVED, PNG, PNG_MOVED = 0, 1, 2, 3


def wheel(service: Service, frame: str, grant: str, seq: int, dy: float) -> None:
    """One wheel notch on the page's rows (below its header), through the service as a driver's input."""
    event = {"kind": "wheel", "x": CSS_W / 2, "y": CSS_H * 0.6, "dx": 0, "dy": dy, "modifiers": 0}
    status, body = service.request("POST", f"/frames/{frame}/input", {"seq": seq, "events": [event]}, token=grant)
    assert status == 200, body


async def settled(tab: BrowserTab, service: Service, frame: str, *, quiet: float = 0.6, within: float = 12,
                  until: str = "true") -> np.ndarray:
    """Wait until the page and the stream are still: the frame's screenshot and the viewer's trace have not
    changed for `quiet` seconds (and the JS condition `until` holds); returns that screenshot."""
    deadline = time.monotonic() + within
    seen: tuple[int, np.ndarray] | None = None
    since = time.monotonic()
    while True:
        length = await tab.eval("window.fsTrace.length")
        shot = await asyncio.to_thread(screenshot, service, frame)
        now = time.monotonic()
        if seen is None or seen[0] != length or not np.array_equal(seen[1], shot):
            seen, since = (length, shot), now
        elif now - since >= quiet and await tab.eval(until):
            return shot
        if now > deadline:
            raise AssertionError(f"the frame or its viewer never settled within {within} s: until {until}: "
                                 f"{await tab.eval('window.fsTrace')}\n{await info(tab, frame)}")
        await asyncio.sleep(0.1)


def replay(draws: list[dict[str, Any]], shape: tuple[int, int]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Each canvas pixel's origin after `draws` (in order, on a canvas that showed a video picture): VIDEO, MOVED,
    PNG or PNG_MOVED, and for VIDEO and MOVED pixels the row and column they had in that picture."""
    kind = np.full(shape, VIDEO, np.uint8)
    ys, xs = np.indices(shape)
    for d in draws:
        if d["kind"] == "video":
            kind[:] = VIDEO
            ys, xs = np.indices(shape)
        elif d["kind"] == "png":
            kind[d["y"] : d["y"] + d["h"], d["x"] : d["x"] + d["w"]] = PNG
        else:
            src = np.s_[d["sy"] : d["sy"] + d["h"], d["sx"] : d["sx"] + d["w"]]
            dst = np.s_[d["y"] : d["y"] + d["h"], d["x"] : d["x"] + d["w"]]
            k, y, x = kind[src].copy(), ys[src].copy(), xs[src].copy()  # the source as it was: overlaps are exact
            kind[dst] = np.where(k == PNG, PNG_MOVED, np.maximum(k, MOVED))
            ys[dst], xs[dst] = y, x
    return kind, ys, xs


def row_error(shown: np.ndarray, page: np.ndarray, rows: np.ndarray, shift: int) -> float:
    """Mean absolute difference of the canvas `rows` against the page's rows `shift` below them."""
    return float(np.abs(shown[rows].astype(int) - page[rows + shift].astype(int)).mean())


async def scroll_and_check(tab: BrowserTab, service: Service) -> str:
    """Open a fresh frame of scroll.html in the viewer with patches, scroll it NOTCHES wheel notches and check the
    canvas against the page; what was seen, for the log."""
    frame = service.create_frame(f"{service.pages}/scroll.html", width=CSS_W, height=CSS_H, dpr=DPR)
    try:
        await service.wait_state_async(frame, "live")
        return await _scroll_and_check(tab, service, frame)
    finally:
        service.request("DELETE", f"/frames/{frame}?purge=1")


async def _scroll_and_check(tab: BrowserTab, service: Service, frame: str) -> str:
    grant = service.token("drive", frame=frame, subject="scroller")
    await open_patch_viewer(service, tab, frame)  # type: ignore[arg-type]  # welcome features: patches, copies
    assert await tab.eval(JS_DRAW_HOOK.format(frame=json.dumps(frame)))
    # Still first: the keyframe and its sharpening (H.264 refinements) drawn, nothing on its way.
    before = await settled(tab, service, frame)
    canvas_before = await canvas_rgb(tab, frame)  # type: ignore[arg-type]
    assert canvas_before.shape == before.shape == (CSS_H * DPR, CSS_W * DPR, 3)
    baseline = float(np.abs(canvas_before.astype(int) - before.astype(int)).mean())
    assert baseline < 4, f"the canvas before the wheel is not the page: mean difference {baseline:.2f}"

    start = await tab.eval("window.fsTrace.length")
    draws_start = await tab.eval("window.fsDraws.length")
    for seq in range(1, NOTCHES + 1):
        wheel(service, frame, grant, seq, NOTCH)
        await tab.wait_for(f"window.fsTrace.slice({start}).filter((e) => 'drawn' in e).length >= {seq}", within=10)
    page = await settled(tab, service, frame, until=f"window.fsTrace.slice({start}).some((e) => 'drawn' in e)")
    # The canvas, and what was drawn into it: nothing may be drawn while they are read (they must agree).
    length = await tab.eval("window.fsTrace.length")
    shown = await canvas_rgb(tab, frame)  # type: ignore[arg-type]
    trace: list[dict[str, Any]] = await tab.eval("window.fsTrace")
    draws: list[dict[str, Any]] = await tab.eval(f"window.fsDraws.slice({draws_start})")
    assert len(trace) == length, "something was drawn while the canvas was read"
    assert not np.array_equal(page, before), "the wheel did not scroll the page"

    # Drawn since the wheel: patches only (each notch's picture), the first of them at once.
    kinds = "".join("P" if e.get("patch") else "V" for e in trace[start:] if "drawn" in e)
    assert kinds.startswith("P"), f"the scroll's first picture drawn was no patch: {kinds} {trace[start:]}"
    assert "V" not in kinds, f"a video picture was drawn after the scroll's first patch: {kinds}"
    assert all(d["kind"] != "video" for d in draws), draws
    copies = [d for d in draws if d["kind"] == "copy"]
    pngs = [d for d in draws if d["kind"] == "png"]
    assert copies, f"no copy was drawn: {kinds} {draws}"
    # Each copy: rows moved up (the page scrolled down) within the canvas, below the header, 1:1; together by as
    # much as the page scrolled.
    height, width = shown.shape[:2]
    for c in copies:
        assert (c["dw"], c["dh"]) == (c["w"], c["h"]) and c["x"] == c["sx"], c
        assert c["sy"] > c["y"] >= HEADER_ROWS and c["sy"] + c["h"] <= height and c["x"] + c["w"] <= width, c
    assert sum(c["sy"] - c["y"] for c in copies) == NOTCHES * NOTCH * DPR, copies
    # Every patch message drawn began with its copy: a copy's `at` is the trace index its message's draw got.
    patch_at = [i for i, e in enumerate(trace) if i >= start and "drawn" in e and e.get("patch")]
    assert sorted({c["at"] for c in copies}) == patch_at, (copies, patch_at)

    # The canvas against the page, pixel by pixel, from each pixel's origin.
    kind, ys, xs = replay(draws, (height, width))
    png, png_moved, moved, video = (kind == k for k in (PNG, PNG_MOVED, MOVED, VIDEO))
    wrong = np.any(shown[png] != page[png], axis=1)
    assert not wrong.any(), f"{wrong.sum()} of {png.sum()} pixels drawn from PNGs differ from the page"
    # A PNG strip moved up by the next notches' copies is exact too, at its new place: a copy is a 1:1 move.
    assert png_moved.sum() >= 0.1 * kind.size, f"copies moved only {png_moved.sum()} pixels of earlier PNGs"
    wrong = np.any(shown[png_moved] != page[png_moved], axis=1)
    assert not wrong.any(), f"{wrong.sum()} of {png_moved.sum()} PNG pixels moved by copies differ from the page"
    # What the copies moved of the H.264 picture: exactly what the canvas showed before the wheel, from where the
    # replay says, and on the page at its place within H.264's tolerance.
    assert moved.sum() >= 0.1 * kind.size, f"copies moved only {moved.sum()} pixels of the video picture"
    assert np.array_equal(shown[moved], canvas_before[ys[moved], xs[moved]]), "a copy did not move pixels 1:1"
    assert np.array_equal(shown[video], canvas_before[video]), "pixels no draw touched changed"
    diff = np.abs(shown.astype(int) - page.astype(int))
    moved_error = float(diff[moved].mean())
    video_error = float(diff[video].mean()) if video.any() else 0.0
    assert moved_error < 4, f"what the copies moved differs from the page: mean {moved_error:.2f}"
    assert video_error < 4, f"what stayed differs from the page: mean {video_error:.2f}"
    # At its place, not a few rows off: the moved rows match the page's same rows far better than the page's rows
    # one to eight pixels above or below (where a copy drawn that far off would have left them).
    rows = np.flatnonzero(moved.all(axis=1))
    rows = rows[(rows >= 8) & (rows < height - 8)]
    assert rows.size >= 64, f"only {rows.size} whole rows of the video picture were moved"
    at_place = row_error(shown, page, rows, 0)
    off = {s: round(row_error(shown, page, rows, s), 2) for s in (*range(-8, 0), *range(1, 9))}
    assert at_place < 0.5 * min(off.values()), f"at place {at_place:.2f}, off by rows: {off}"

    state = await info(tab, frame)
    assert state["decoderErrors"] == 0 and state["patchErrors"] == 0 and state["gaps"] == 0, state
    return (f"drawn after the wheel: {kinds}; copies {[(c['sy'], c['y'], c['h']) for c in copies]}"
            f" (source y, y, height), {len(pngs)} PNG rects {[(p['y'], p['h']) for p in pngs]}; pixels: PNG"
            f" {png.sum()}, PNG moved {png_moved.sum()}, video moved {moved.sum()}, video {video.sum()};"
            f" mean difference from the page: moved {moved_error:.2f}, header {video_error:.2f}, whole canvas"
            f" before the wheel {baseline:.2f}; moved rows at place {at_place:.2f}, nearest off {min(off.values())}")


async def test_chromium_draws_a_wheel_scroll_from_copies_and_pngs(service: Service, page: Page) -> None:
    started = time.monotonic()
    print(await scroll_and_check(page, service))
    assert "Chrome/" in await page.eval("navigator.userAgent")
    print(f"Chromium: {time.monotonic() - started:.1f} s")


async def test_firefox_draws_a_wheel_scroll_from_copies_and_pngs(service: Service, tab: Tab) -> None:
    started = time.monotonic()
    print(await scroll_and_check(tab, service))
    assert "Firefox/" in await tab.eval("navigator.userAgent")
    print(f"Firefox: {time.monotonic() - started:.1f} s")
