from __future__ import annotations

import pytest

from framestream.core.h264 import (
    choose_level,
    codec_string_from_access_unit,
    codec_string_from_sps,
    is_idr,
    split_annexb,
)


@pytest.mark.parametrize(
    ("width", "height", "fps", "level"),
    [(640, 400, 30, "3.0"), (1280, 720, 30, "3.1"), (1280, 800, 30, "3.2"), (1920, 1080, 30, "4.0"),
     (2560, 1600, 30, "5.0"), (2560, 1600, 60, "5.1")],
)
def test_level_is_the_lowest_that_fits(width: int, height: int, fps: int, level: str) -> None:
    assert choose_level(width, height, fps) == level


def test_level_refuses_nonsense() -> None:
    with pytest.raises(ValueError):
        choose_level(0, 100, 30)
    with pytest.raises(ValueError):
        choose_level(8192, 8192, 120)


def test_annexb_split_handles_3_and_4_byte_start_codes() -> None:
    data = b"\x00\x00\x00\x01\x67\x42\xc0\x20\xaa\x00\x00\x01\x68\xce\x00\x00\x00\x01\x65\x88\x84"
    units = split_annexb(data)
    assert units == [b"\x67\x42\xc0\x20\xaa", b"\x68\xce", b"\x65\x88\x84"]
    assert is_idr(data)
    assert not is_idr(b"\x00\x00\x01\x41\x9a")


def test_codec_string_comes_from_the_sps() -> None:
    assert codec_string_from_sps(b"\x67\x42\xc0\x20") == "avc1.42C020"
    assert codec_string_from_sps(b"\x67\x64\x00\x28\x00") == "avc1.640028"
    assert codec_string_from_access_unit(b"\x00\x00\x00\x01\x67\x4d\x40\x1f\x00\x00\x01\x65") == "avc1.4D401F"
    assert codec_string_from_access_unit(b"\x00\x00\x01\x41\x9a") is None
    with pytest.raises(ValueError):
        codec_string_from_sps(b"\x68\xce\x00\x00")
