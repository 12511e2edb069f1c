"""Pictures of copies (media/moved_pictures.py) through each browser's own WebCodecs VideoDecoder: headless
Chromium and Firefox ESR (over WebDriver BiDi) decode the stream of a box carried across white with a counter, as
the service sends it to an H.264-only viewer, and the canvas shows each picture: the box where it is, white where
it was, and the whole picture close to its source.

The stream is made here by the real encoder (libx264 for the IDR and the counter's rows, our slices for the rest);
the page the decoder runs in is served on 127.0.0.1 (a secure context, as WebCodecs needs).
"""

from __future__ import annotations

import base64
import json
from typing import Any

import numpy as np
import pytest

from framestream.media.encoder import H264Encoder
from tests.media.test_moved_pictures import BOX, COPIES, box_page, changed_rect, ours
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


async def decode_in(tab: BrowserTab, base: str) -> None:
    await tab.navigate(f"{base}/page2.html")
    codec, units, sources, xs = moving_box_stream()
    raw = await tab.eval(JS_DECODE.format(units=json.dumps([base64.b64encode(u).decode() for u in units]),
                                          codec=json.dumps(codec), w=W, h=H, grid=GRID), within=60)
    result: dict[str, Any] = json.loads(raw)
    assert result["error"] is None, result["error"]
    assert len(result["grids"]) == len(units), "every access unit decoded to one picture"
    for i, (grid, source, x) in enumerate(zip(result["grids"], sources, xs, strict=True)):
        shown = np.frombuffer(base64.b64decode(grid), np.uint8).reshape(H // GRID, W // GRID, 3)
        want = source[::GRID, ::GRID]
        diff = float(np.abs(shown.astype(int) - want.astype(int)).mean())
        assert diff <= 4.0, f"picture {i}: {diff:.1f} from its source on average"
        inside = shown[(160 + BOX // 2) // GRID, (x + BOX // 2) // GRID].tolist()
        assert close_to(inside, BLUE), f"picture {i}: the box's middle shows {inside}"
        if i:  # the middle of the strip the box uncovered
            before = xs[i - 1]
            gone = (before + x) // 2 if x > before else x + BOX + (before - x) // 2
            left_behind = shown[(160 + BOX // 2) // GRID, gone // GRID].tolist()
            assert close_to(left_behind, WHITE), f"picture {i}: where the box was shows {left_behind}"


async def test_chromium_decodes_pictures_of_copies(web_pages: str, page: Page) -> None:
    await decode_in(page, web_pages)


async def test_firefox_decodes_pictures_of_copies(web_pages: str, tab: Tab) -> None:
    await decode_in(tab, web_pages)
