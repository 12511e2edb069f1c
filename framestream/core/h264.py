"""H.264 facts the service needs without touching an encoder: levels, Annex B, codec strings."""

from __future__ import annotations

# (level name, level_idc, max frame size in macroblocks, max macroblocks per second), from ITU-T H.264 table A-1.
_LEVELS: tuple[tuple[str, int, int, int], ...] = (
    ("3.0", 30, 1620, 40500),
    ("3.1", 31, 3600, 108000),
    ("3.2", 32, 5120, 216000),
    ("4.0", 40, 8192, 245760),
    ("4.1", 41, 8192, 245760),
    ("4.2", 42, 8704, 522240),
    ("5.0", 50, 22080, 589824),
    ("5.1", 51, 36864, 983040),
    ("5.2", 52, 36864, 2073600),
)

NAL_SLICE = 1
NAL_IDR = 5
NAL_SPS = 7
NAL_PPS = 8


def choose_level(width: int, height: int, fps: float) -> str:
    """The lowest level whose frame size and macroblock rate admit `width`x`height` at `fps`.

    Announcing the lowest level that fits matters: Safari refuses a stream whose SPS level exceeds the one in
    the codec string, and some decoders size their buffers from it.
    """
    if width <= 0 or height <= 0 or fps <= 0:
        raise ValueError("width, height and fps must be positive")
    mbs = ((width + 15) // 16) * ((height + 15) // 16)
    mbps = mbs * fps
    for name, _idc, max_fs, max_mbps in _LEVELS:
        # A.3.1: the frame must also fit within sqrt(8 * MaxFS) macroblocks in each direction.
        side = int((8 * max_fs) ** 0.5)
        if mbs <= max_fs and mbps <= max_mbps and (width + 15) // 16 <= side and (height + 15) // 16 <= side:
            return name
    raise ValueError(f"{width}x{height} at {fps} fps exceeds H.264 level 5.2")


def split_annexb(data: bytes) -> list[bytes]:
    """The NAL units of an Annex B byte stream, start codes removed."""
    units: list[bytes] = []
    i = data.find(b"\x00\x00\x01")
    while i >= 0:
        start = i + 3
        nxt = data.find(b"\x00\x00\x01", start)
        end = len(data) if nxt < 0 else nxt
        # A 4-byte start code leaves a trailing zero on the previous unit.
        unit = data[start:end]
        if nxt >= 0 and unit.endswith(b"\x00"):
            unit = unit[:-1]
        if unit:
            units.append(unit)
        i = nxt
    return units


def nal_type(unit: bytes) -> int:
    return unit[0] & 0x1F


def codec_string_from_sps(sps: bytes) -> str:
    """`avc1.PPCCLL` from an SPS NAL unit (header byte included): profile_idc, constraint flags, level_idc."""
    if len(sps) < 4 or nal_type(sps) != NAL_SPS:
        raise ValueError("not an SPS NAL unit")
    return f"avc1.{sps[1]:02X}{sps[2]:02X}{sps[3]:02X}"


def codec_string_from_access_unit(data: bytes) -> str | None:
    """The codec string of the SPS inside an access unit, or None when it carries none."""
    for unit in split_annexb(data):
        if nal_type(unit) == NAL_SPS:
            return codec_string_from_sps(unit)
    return None


def is_idr(data: bytes) -> bool:
    return any(nal_type(u) == NAL_IDR for u in split_annexb(data))
