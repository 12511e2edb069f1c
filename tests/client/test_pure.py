"""framestream.client's pure parts: the events of a step, typed errors, pictures and PNG."""

from __future__ import annotations

import av
import numpy as np
import pytest
from av.video.reformatter import ColorRange, Colorspace

from framestream.client import Superseded, UnknownFrame, png_to_rgb, rgb_to_png, scale_png
from framestream.client.errors import ServiceError, error_for
from framestream.client.pictures import Picture, png_size
from framestream.client.steps import chord, click, drag, parse_chord, text
from framestream.client.view import FrameView
from framestream.client.wire import encode_client_message
from framestream.core.wire import Input, KeyEvent, MouseEvent, parse_client_message


def test_chords_name_modifiers_and_keys() -> None:
    assert parse_chord("Control+Shift+z") == (["Control", "Shift"], "z")
    assert parse_chord("ctrl++") == (["Control"], "+")
    assert parse_chord("enter") == ([], "Enter")
    with pytest.raises(ValueError):
        parse_chord("Hyper+a")
    assert chord("Control+A") == [KeyEvent("down", "Control", "ControlLeft", 2), KeyEvent("down", "a", "KeyA", 2),
                                  KeyEvent("up", "a", "KeyA", 2), KeyEvent("up", "Control", "ControlLeft", 0)]
    assert [e.key for e in chord("Shift+1") if isinstance(e, KeyEvent) and e.key != "Shift"] == ["!", "!"]


def test_a_step_encodes_to_what_the_service_parses() -> None:
    events = (*click(10, 20, count=2), *drag(0, 0, 30, 40, steps=3), *text("hé"))
    message = Input("f1", "grant", 7, tuple(events))
    assert parse_client_message(encode_client_message(message)) == message
    # A click moves there first (some controls act only once hovered), then presses and releases each time.
    assert [(e.action, e.clicks) for e in events[:5] if isinstance(e, MouseEvent)] == \
        [("move", 0), ("down", 1), ("up", 1), ("down", 2), ("up", 2)]
    assert len(text("x" * 25000)) == 3


def test_error_codes_are_typed() -> None:
    error = error_for("superseded", "newer grant", frame="f1", seq=3)
    assert isinstance(error, Superseded) and error.code == "superseded" and error.seq == 3
    assert isinstance(error_for("unknown-frame", "no"), UnknownFrame)
    other = error_for("page-limit", "too many pages")
    assert type(other) is ServiceError and other.code == "page-limit"


def test_png_round_trip_and_area_scaling() -> None:
    rgb = np.zeros((40, 60, 3), np.uint8)
    rgb[:, 30:] = (30, 60, 220)
    png = rgb_to_png(rgb)
    assert png_size(png) == (60, 40)
    assert np.array_equal(png_to_rgb(png), rgb)
    half = png_to_rgb(scale_png(png, 30, 20))
    assert half.shape == (20, 30, 3) and tuple(half[10, 25]) == (30, 60, 220) and tuple(half[10, 5]) == (0, 0, 0)


# The stream's SPS signals its matrix (matrix_coefficients 6, SMPTE 170M, today; 1, BT.709, before): both read.
@pytest.mark.parametrize(("matrix", "signalled"), [(Colorspace.ITU601, 6), (Colorspace.ITU709, 1)])
def test_a_pictures_pixel_from_yuv_matches_its_rgb_conversion(matrix: Colorspace, signalled: int) -> None:
    rgb = np.zeros((32, 32, 3), np.uint8)
    rgb[:16, :16], rgb[16:, 16:], rgb[:16, 16:] = (220, 30, 30), (30, 60, 220), (240, 200, 0)
    frame = av.VideoFrame.from_ndarray(rgb, format="rgb24").reformat(
        format="yuv420p", dst_colorspace=matrix, dst_color_range=ColorRange.MPEG)
    frame.colorspace = signalled
    for x, y in [(4, 4), (24, 24), (24, 4), (4, 24)]:
        from_yuv = Picture(frame, 0, 0, 1, 0, 0.0).pixel(x, y)
        converted = Picture(frame, 0, 0, 1, 0, 0.0)
        assert converted.rgb is not None
        assert all(abs(a - b) <= 3 for a, b in zip(from_yuv, converted.pixel(x, y), strict=True))
        assert all(abs(a - int(b)) <= 3 for a, b in zip(from_yuv, rgb[y, x], strict=True))


def test_the_pages_cursor_goes_with_its_browser() -> None:
    view = FrameView("f1", decode=False, on_keyframe_needed=lambda frame: None)
    view.on_message({"type": "cursor", "frame": "f1", "cursor": "pointer"})
    view.on_message({"type": "frame-state", "frame": "f1", "state": "paused", "viewers": 1})
    assert view.cursor == "pointer"  # the same browser, frozen
    view.on_message({"type": "frame-state", "frame": "f1", "state": "launching", "viewers": 1})
    assert view.cursor == "default"  # a new browser's page tells its own
