"""The patch message (kind 2) and hello/welcome `features`, against docs/protocol.md's worked example."""

from __future__ import annotations

import json

import pytest

from framestream.core.errors import ProtocolError
from framestream.core.wire import (
    FORMAT_COPY,
    FORMAT_PNG,
    KIND_PADDING,
    KIND_PATCH,
    Hello,
    PatchRect,
    VideoHeader,
    pack_padding,
    pack_patch_payload,
    pack_video_header,
    parse_client_message,
    unpack_patch_payload,
    unpack_video_header,
    welcome,
)


def test_the_worked_example_of_docs_protocol() -> None:
    # Slot 2, picture 259, captured at 1700000000.123456 s: one 24x32 PNG at (200, 96).
    png = b"\x89PNG\r\n\x1a\n" + b"\x00" * 205  # 213 bytes, as in the example
    message = pack_video_header(0, 2, 259, 1_700_000_000_123_456, KIND_PATCH) + pack_patch_payload(
        [PatchRect(200, 96, 24, 32, FORMAT_PNG, png)]
    )
    assert message[:16].hex(" ") == "02 00 00 02 00 00 01 03 00 06 0a 24 18 20 22 40"
    assert len(message) == 16 + 2 + 14 + 213
    assert message[16:32].hex(" ") == "00 01 00 c8 00 60 00 18 00 20 01 00 00 00 00 d5"
    header = unpack_video_header(message)
    assert (header.kind, header.slot, header.sequence, header.keyframe) == (KIND_PATCH, 2, 259, False)
    assert unpack_patch_payload(message[16:]) == [PatchRect(200, 96, 24, 32, FORMAT_PNG, png)]


def test_several_rectangles_round_trip_in_order() -> None:
    rects = [PatchRect(0, 0, 1, 1, FORMAT_PNG, b"a"), PatchRect(65535, 7, 65535, 2, FORMAT_PNG, b"bcd")]
    assert unpack_patch_payload(pack_patch_payload(rects)) == rects


@pytest.mark.parametrize("rects", [[], [PatchRect(0, 0, 0, 1, FORMAT_PNG, b"")], [PatchRect(0, 0, 1, 1, 9, b"")]])
def test_packing_refuses_what_the_contract_does_not_have(rects: list[PatchRect]) -> None:
    with pytest.raises(ValueError):
        pack_patch_payload(rects)


def test_the_copy_example_of_docs_protocol() -> None:
    # A 6-row scroll of a 2560x1600 picture under a 56-row header: one copy, then the strip's PNG of 3150 bytes.
    strip = b"\x89PNG\r\n\x1a\n" + b"\x00" * 3142
    payload = pack_patch_payload([PatchRect.copy((0, 56, 2560, 1538), (0, 62)),
                                  PatchRect(0, 1594, 2560, 6, FORMAT_PNG, strip)])
    assert payload[:20].hex(" ") == "00 02 00 00 00 38 0a 00 06 02 02 00 00 00 00 04 00 00 00 3e"
    assert payload[20:34].hex(" ") == "00 00 06 3a 0a 00 00 06 01 00 00 00 0c 4e"


def test_a_copy_carries_its_source_and_comes_first() -> None:
    copy = PatchRect.copy((0, 40, 640, 360), (0, 52))
    rects = [copy, PatchRect(0, 400, 640, 12, FORMAT_PNG, b"strip")]
    payload = pack_patch_payload(rects)
    assert payload[2:20] == bytes.fromhex("0000 0028 0280 0168 02 00 00000004 0000 0034")  # x y w h format - length src
    assert unpack_patch_payload(payload) == rects and unpack_patch_payload(payload)[0].source == (0, 52)
    for wrong in ([rects[1], copy], [copy, copy], [PatchRect(0, 0, 1, 1, FORMAT_COPY, b"\x00\x01\x02")]):
        with pytest.raises(ValueError, match="copy"):
            pack_patch_payload(wrong)
    with pytest.raises(ValueError, match="copy"):  # a copy's source must be 4 bytes
        unpack_patch_payload(bytes.fromhex("0001 0000 0000 0001 0001 02 00 00000003 000000"))
    with pytest.raises(ValueError, match="not a copy"):
        _ = rects[1].source


def test_unpacking_refuses_a_cut_or_padded_payload() -> None:
    payload = pack_patch_payload([PatchRect(1, 2, 3, 4, FORMAT_PNG, b"image")])
    for cut in (b"", payload[:1], payload[:10], payload[:-1], payload + b"\x00"):
        with pytest.raises(ValueError):
            unpack_patch_payload(cut)


def test_an_unknown_kind_is_refused() -> None:
    with pytest.raises(ValueError):
        pack_video_header(0, 1, 1, 1, kind=4)


def test_padding_is_kind_3_of_the_size_asked_with_zeros_after_the_header() -> None:
    message = pack_padding(7, 100)
    assert len(message) == 100 and message[16:] == bytes(84)
    assert unpack_video_header(message) == VideoHeader(KIND_PADDING, 0, 7, 0, 0)
    assert len(pack_padding(7, 3)) == 16, "never shorter than its header"


def test_hello_features_are_optional_and_unknown_names_ignored() -> None:
    assert parse_client_message('{"type":"hello","token":"t"}') == Hello("t", None)
    assert parse_client_message('{"type":"hello","token":"t","features":[]}') == Hello("t", ())
    parsed = parse_client_message('{"type":"hello","token":"t","features":["later","patches"]}')
    assert parsed == Hello("t", ("patches",))


@pytest.mark.parametrize("features", ['"patches"', "[1]", '{"patches":true}', json.dumps(["x"] * 17)])
def test_hello_features_of_the_wrong_type_are_refused(features: str) -> None:
    with pytest.raises(ProtocolError) as err:
        parse_client_message(f'{{"type":"hello","token":"t","features":{features}}}')
    assert err.value.code == "bad-message"


def test_welcome_names_features_only_when_asked() -> None:
    assert welcome("local", True) == '{"type":"welcome","protocol":1,"sandbox":"local","shared_frames":true}'
    assert json.loads(welcome("local", True, ("patches",)))["features"] == ["patches"]
    assert json.loads(welcome("local", True, ()))["features"] == []
