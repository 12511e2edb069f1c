"""Pictures of copies (media/moved_pictures.py) through each browser's own WebCodecs VideoDecoder: headless
Chromium and Firefox ESR (over WebDriver BiDi) decode the stream of a box carried across white with a counter, as
the service sends it to an H.264-only viewer, and the canvas shows each picture: the box where it is, white where
it was, and the whole picture close to its source. Then a scrolled text page, whose new rows go as P pictures of
their band (media/inter_band.py), and grey text scrolled by odd steps (chroma vectors of half a sample): every
picture close to its source.

The stream is made here by the real encoder (libx264 for the IDR and the counter's rows, our slices for the rest);
the page the decoder runs in is served on 127.0.0.1 (a secure context, as WebCodecs needs). Last, small changes amid
text as bands of their rows, and their refinements.
"""

from __future__ import annotations

import base64
import json
from typing import Any

import cv2
import numpy as np
import pytest

from framestream.media.encoder import H264Encoder
from tests.media.test_inter_band import Bands, band_p_slices, scrolled
from tests.media.test_moved_pictures import BOX, COPIES, Run, box_page, changed_rect, odd_scroll, ours, text_page
from tests.web.browser import BrowserTab, Page, close_to
from tests.web.firefox import Tab

pytestmark = [pytest.mark.integration, pytest.mark.asyncio(loop_scope="module")]

W, H = 640, 384
GRID = 8  # the canvas is read back every GRID pixels each way
BLUE, WHITE = (30, 90, 220), (255, 255, 255)

# Decode every access unit, draw each picture and read it back (every GRID pixels, RGB, base64).
JS_DECODE = """
(async () => {{
  const units = {units}.map((b) => Uint8Array.from(atob(b), (c) => c.charCodeAt(0)));
  const canvas = new OffscreenCanvas({w}, {h});
  const ctx = canvas.getContext('2d', {{ willReadFrequently: true }});
  const grids = [];
  let error = null;
  const decoder = new VideoDecoder({{
    output: (frame) => {{
      ctx.drawImage(frame, 0, 0);
      frame.close();
      const data = ctx.getImageData(0, 0, {w}, {h}).data;
      let s = '';
      for (let y = 0; y < {h}; y += {grid}) for (let x = 0; x < {w}; x += {grid}) {{
        const i = (y * {w} + x) * 4;
        s += String.fromCharCode(data[i], data[i + 1], data[i + 2]);
      }}
      grids.push(btoa(s));
    }},
    error: (e) => {{ error = String(e); }},
  }});
  decoder.configure({{ codec: {codec}, codedWidth: {w}, codedHeight: {h}, optimizeForLatency: true }});
  units.forEach((data, i) => decoder.decode(new EncodedVideoChunk({{
    type: i === 0 ? 'key' : 'delta', timestamp: i * 33333, data }})));
  await decoder.flush().catch((e) => {{ error = error || String(e); }});
  return JSON.stringify({{ error, grids }});
}})()
"""


def moving_box_stream() -> tuple[str, list[bytes], list[np.ndarray], list[int]]:
    """(codec string, access units, source pictures as RGB, box x per picture)."""
    xs = [int(x) for x in np.cumsum([40] + [18, 16, 20, 18, 36] * 4 + [-18, -20] * 10)]
    encoder = H264Encoder(W, H, COPIES)
    units, sources, last = [], [], None
    try:
        for step, x in enumerate(xs):
            page = box_page(step, x)
            encoder.update(page)
            picture = encoder.encode(keyframe=last is None, changed=None if last is None else changed_rect(last, page))
            assert ours(picture) == (step >= 2), f"picture {step}: copies from the second move on"
            units.append(picture.data)
            sources.append(np.ascontiguousarray(page[:, :, 2::-1]))
            last = page
        assert encoder.codec_string is not None
        return encoder.codec_string, units, sources, xs
    finally:
        encoder.close()


def scroll_stream(monkeypatch: pytest.MonkeyPatch) -> tuple[str, list[bytes], list[np.ndarray]]:
    """(codec string, access units, source pictures as RGB) of a text page scrolled down and back up."""
    with monkeypatch.context() as patch, scrolled(patch, [6] * 30 + [-6] * 15) as (run, _):
        assert sum(band_p_slices(run, p) > 0 for p in run.pictures) >= 40, "the new rows went as P bands"
        assert run.encoder.codec_string is not None
        sources = [np.ascontiguousarray(i420_to_rgb(source)) for source in run.sources]
        return run.encoder.codec_string, [p.data for p in run.pictures], sources


def odd_scroll_stream() -> tuple[str, list[bytes], list[np.ndarray]]:
    """(codec string, access units, source pictures as RGB) of grey text scrolled by odd steps, as at dpr 1: copies
    whose chroma vectors are half a sample."""
    run, _ = odd_scroll()
    run.close()
    assert all(ours(p) for p in run.pictures[2:]), "odd steps over grey text went as copies"
    assert run.encoder.codec_string is not None
    return run.encoder.codec_string, [p.data for p in run.pictures], [i420_to_rgb(s) for s in run.sources]


def bands_stream(monkeypatch: pytest.MonkeyPatch) -> tuple[str, list[bytes], list[np.ndarray]]:
    """(codec string, access units, source pictures as RGB) of small changes amid text, as bands of their rows
    (media/moved_pictures.py `plan`): a spinner, then letters typed into a field, each few refined by a P picture of
    their band at the still quality (where x264 turns its filter off, not in the pictures' other slices)."""
    page = text_page()[:H]
    page[300:340, 20:620] = 255  # a text field
    with monkeypatch.context() as patch:
        run = Run()
        bands = Bands(run, patch)
        run.send(page)
        run.send(page, refinement=True)  # as the policy does after a page's first picture
        for step in range(1, 13):
            picture = page.copy()
            if step < 8:
                cv2.ellipse(picture, (560, 60), (10, 10), 0, 30 * step, 30 * step + 90, (190, 100, 20, 255), 3)
            cv2.putText(picture, "typed text"[: max(0, step - 6)], (30, 330), cv2.FONT_HERSHEY_SIMPLEX, 0.9,
                        (20, 20, 20, 255), 2)
            run.send(picture)
            if step in (5, 9, 12):
                run.send(picture, refinement=True)
        run.close()
    refined = [i for i, p in enumerate(run.pictures) if p.refinement and ours(p)]
    assert sum(ours(p) for p in run.pictures) >= 10 and len(refined) == 3, "small changes went as bands"
    assert any(bands.keyframes.get(i) == [False] for i in refined), "a refinement was a P picture of its band"
    assert run.encoder.codec_string is not None
    sources = [np.ascontiguousarray(i420_to_rgb(source)) for source in run.sources]
    return run.encoder.codec_string, [p.data for p in run.pictures], sources


def i420_to_rgb(i420: np.ndarray) -> np.ndarray:
    return np.asarray(cv2.cvtColor(i420, cv2.COLOR_YUV2RGB_I420))


async def shown_in(tab: BrowserTab, base: str, codec: str, units: list[bytes],
                   sources: list[np.ndarray]) -> list[np.ndarray]:
    """What the browser's canvas shows of each picture (every GRID pixels), each checked close to its source."""
    await tab.navigate(f"{base}/page2.html")
    raw = await tab.eval(JS_DECODE.format(units=json.dumps([base64.b64encode(u).decode() for u in units]),
                                          codec=json.dumps(codec), w=W, h=H, grid=GRID), within=60)
    result: dict[str, Any] = json.loads(raw)
    assert result["error"] is None, result["error"]
    assert len(result["grids"]) == len(units), "every access unit decoded to one picture"
    shown = [np.frombuffer(base64.b64decode(grid), np.uint8).reshape(H // GRID, W // GRID, 3)
             for grid in result["grids"]]
    for i, (picture, source) in enumerate(zip(shown, sources, strict=True)):
        # On average over each eighth of the rows: a wrong strip (the rows that came into view) shows.
        strips = np.abs(picture.astype(int) - source[::GRID, ::GRID].astype(int)).reshape(8, -1).mean(axis=1)
        assert strips.max() <= 4.0, f"picture {i}: {strips.round(1).tolist()} from its source on average"
    return shown


async def decode_in(tab: BrowserTab, base: str, monkeypatch: pytest.MonkeyPatch) -> None:
    codec, units, sources, xs = moving_box_stream()
    for i, (shown, x) in enumerate(zip(await shown_in(tab, base, codec, units, sources), xs, strict=True)):
        inside = shown[(160 + BOX // 2) // GRID, (x + BOX // 2) // GRID].tolist()
        assert close_to(inside, BLUE), f"picture {i}: the box's middle shows {inside}"
        if i:  # the middle of the strip the box uncovered
            before = xs[i - 1]
            gone = (before + x) // 2 if x > before else x + BOX + (before - x) // 2
            left_behind = shown[(160 + BOX // 2) // GRID, gone // GRID].tolist()
            assert close_to(left_behind, WHITE), f"picture {i}: where the box was shows {left_behind}"


    await shown_in(tab, base, *scroll_stream(monkeypatch))
    await shown_in(tab, base, *odd_scroll_stream())
    await shown_in(tab, base, *bands_stream(monkeypatch))


async def test_chromium_decodes_pictures_of_copies(web_pages: str, page: Page, monkeypatch: pytest.MonkeyPatch,
                                                   ) -> None:
    await decode_in(page, web_pages, monkeypatch)


async def test_firefox_decodes_pictures_of_copies(web_pages: str, tab: Tab, monkeypatch: pytest.MonkeyPatch,
                                                  ) -> None:
    await decode_in(tab, web_pages, monkeypatch)
