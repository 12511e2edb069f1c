"""A scroll as a copy (media/scroll.py, media/sender.py): found exactly, and what a viewer composes from the message
(the copy first, then the images) is the new picture, pixel for pixel, whatever moved and whatever else changed.
Pure: synthetic pictures, real libx264 and PNG, no display."""

from __future__ import annotations

import cv2
import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from framestream.core.pacing import PatchRule
from framestream.core.wire import FORMAT_COPY, unpack_patch_payload
from framestream.media.diff import changed_boxes, rows_equal
from framestream.media.encoder import H264Encoder
from framestream.media.picture import KIND_PATCH, PatchGate
from framestream.media.scroll import Scroll, find_scroll
from framestream.media.sender import ChangeSender

W, H = 480, 240


def page(rows: int, seed: int) -> np.ndarray:
    """A tall (rows, W, 4) BGRX page like text: most rows distinct, some blank, some repeated."""
    rng = np.random.default_rng(seed)
    out = np.full((rows, W, 4), 255, np.uint8)
    for y in range(rows):
        kind = rng.integers(0, 6)
        if kind == 0:
            continue  # blank
        if kind == 1 and y:
            out[y] = out[y - 1]  # a repeated row (a rule, a flat block)
            continue
        width = int(rng.integers(8, W))
        out[y, :width, :3] = rng.integers(0, 255, (width, 3))
    return out


def viewport(content: np.ndarray, top: int, header: int, scrollbar: bool = False) -> np.ndarray:
    """The screen: `content` from row `top` under a fixed header of `header` rows, and a scrollbar at the right
    whose thumb moves a little where the content moves much."""
    screen = content[top : top + H].copy()
    screen[:header] = (40, 160, 40, 255)
    if scrollbar:
        screen[:, W - 14 :] = (230, 230, 230, 255)
        thumb = top * H // len(content)
        screen[thumb : thumb + 40, W - 12 : W - 2] = (120, 120, 120, 255)
    return screen


def test_rows_equal_is_per_row_across_blocks() -> None:
    a = page(H, 1)
    b = a.copy()
    b[3, 5, 1] ^= 1
    b[200, W - 1, 0] ^= 1
    expected = np.ones(H, bool)
    expected[[3, 200]] = False
    assert np.array_equal(rows_equal(a, b), expected)
    assert np.array_equal(rows_equal(a[:, 1:97], b[:, 1:97]), np.arange(H) != 3)  # unaligned columns too


def test_a_scroll_is_found_with_its_shift_and_the_rows_it_covers() -> None:
    content = page(2 * H, 2)
    before, after = viewport(content, 40, 24), viewport(content, 52, 24)  # 12 rows down the page: content up
    scroll = find_scroll(before, after, (0, 24, W, H))
    assert scroll == Scroll(-12, (0, 24, W, H - 12))
    assert scroll.source == (0, 36)
    x0, y0, x1, y1 = scroll.box
    assert np.array_equal(after[y0:y1, x0:x1], before[y0 - scroll.dy : y1 - scroll.dy, x0:x1])
    assert find_scroll(after, before, (0, 24, W, H)) == Scroll(12, (0, 36, W, H))  # back up


def test_a_scrollbar_s_thumb_is_left_out_of_the_copy() -> None:
    content = page(3 * H, 6)
    before, after = viewport(content, H, 24, scrollbar=True), viewport(content, H + 30, 24, scrollbar=True)
    scroll = find_scroll(before, after, (0, 24, W, H))
    assert scroll is not None and scroll.dy == -30
    assert scroll.box == (0, 24, W - 48, H - 30), "every row the content moved in, without the scrollbar's columns"


def test_no_scroll_in_noise_a_small_box_or_a_still_picture() -> None:
    rng = np.random.default_rng(3)
    before = rng.integers(0, 255, (H, W, 4), dtype=np.uint8)
    after = rng.integers(0, 255, (H, W, 4), dtype=np.uint8)
    assert find_scroll(before, after, (0, 0, W, H)) is None
    content = page(2 * H, 4)
    assert find_scroll(viewport(content, 0, 0), viewport(content, 6, 0), (0, 0, W, 20)) is None  # too short
    assert find_scroll(before, before, (0, 0, W, H)) is None  # a shift of 0 is no scroll


def sender(copies: bool = True) -> tuple[ChangeSender, H264Encoder]:
    encoder = H264Encoder(W, H)
    gate = PatchGate()
    gate.open, gate.copies = True, copies
    return ChangeSender(encoder, gate, PatchRule(max_area=W * H // 4)), encoder


def compose(before: np.ndarray, payload: bytes) -> np.ndarray:
    """A viewer's drawing of one patch message on the picture before (BGR)."""
    canvas = before[:, :, :3].copy()
    for n, rect in enumerate(unpack_patch_payload(payload)):
        x, y, w, h = rect.x, rect.y, rect.width, rect.height
        if rect.format == FORMAT_COPY:
            assert n == 0
            sx, sy = rect.source
            canvas[y : y + h, x : x + w] = canvas[sy : sy + h, sx : sx + w]
        else:
            canvas[y : y + h, x : x + w] = cv2.imdecode(np.frombuffer(rect.data, np.uint8), cv2.IMREAD_COLOR)
    return canvas


def send(chooser: ChangeSender, before: np.ndarray, after: np.ndarray, now: float) -> tuple[int, bytes] | None:
    boxes = changed_boxes(before, after, None)
    rows = (min(b[1] for b in boxes), max(b[3] for b in boxes)) if boxes else None
    hint = [(x0, y0, x1 - x0, y1 - y0) for x0, y0, x1, y1 in boxes]
    out = chooser.send(after, now=now, keyframe=False, refinement=False, rows=rows, boxes=boxes, hint=hint,
                       previous=before)
    return None if out is None else (out.kind, out.data)


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 1 << 16), shifts=st.lists(st.integers(-30, 30), min_size=1, max_size=4),
       header=st.sampled_from([0, 16, 24]), extra=st.booleans(), columns=st.booleans(), scrollbar=st.booleans())
def test_what_a_viewer_composes_is_the_new_picture(*, seed: int, shifts: list[int], header: int, extra: bool,
                                                   columns: bool, scrollbar: bool) -> None:
    """Issue 26's invariant for copies: after each message a viewer's picture is the page, exactly (a message that
    is no patch is H.264, which carries the whole picture). `columns`: two columns of text with a blank gap, so
    the change is two boxes that scrolled together; `scrollbar`: a thumb at the right edge cuts the rows."""
    content = page(3 * H, seed)
    if columns:
        content[:, 140:200] = 255
    chooser, encoder = sender()
    try:
        top = H
        before = viewport(content, top, header, scrollbar)
        shown = before[:, :, :3].copy()
        encoder.update(before)
        encoder.encode(keyframe=True)
        for n, shift in enumerate(shifts):
            top += shift
            after = viewport(content, top, header, scrollbar)
            if extra:  # something else changed too: a counter in the header, a caret in the content
                after[2:10, 200 + n : 208 + n, :3] = (n * 40) % 255
            sent = send(chooser, before, after, now=float(n) / 30)
            if sent is not None and sent[0] == KIND_PATCH:
                shown = compose(shown, sent[1])
                assert np.array_equal(shown, after[:, :, :3])
            elif sent is not None:
                shown = after[:, :, :3].copy()  # (H.264: the decoder's picture, the whole page)
            before = after
    finally:
        encoder.close()


def test_a_scroll_goes_as_one_copy_and_a_strip_and_without_copies_as_h264() -> None:
    content = page(3 * H, 5)
    before, after = viewport(content, H, 24), viewport(content, H + 9, 24)
    for copies, kinds in ((True, "copy"), (False, "video")):
        chooser, encoder = sender(copies)
        try:
            encoder.update(before)
            encoder.encode(keyframe=True)
            sent = send(chooser, before, after, now=1.0)
            assert sent is not None
            if kinds == "copy":
                assert sent[0] == KIND_PATCH
                copy, *images = unpack_patch_payload(sent[1])
                assert copy.format == FORMAT_COPY and (copy.y, copy.height, copy.source) == (24, H - 33, (0, 33))
                assert [(r.y, r.height) for r in images] == [(H - 9, 9)], "the strip that came into view"
                assert chooser.pending, "the encoder catches up with the next H.264 picture"
            else:
                assert sent[0] != KIND_PATCH
        finally:
            encoder.close()
