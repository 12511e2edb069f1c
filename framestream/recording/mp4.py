"""Fragmented MP4 (ISO BMFF) for one H.264 stream, written box by box: the header once, then one fragment at a time.

Why not FFmpeg's muxer: a frame's stream has no regular keyframes and no regular picture rate (a still page
sends nothing for an hour), so a fragment must be cut by time even when no next picture comes to close it, and
each fragment must reach the file in one write, so that a killed service leaves every whole fragment playable.
The muxer cuts fragments only when a packet arrives and buffers inside the process. The boxes are few and fixed
(ISO/IEC 14496-12 and 14496-15): `ftyp`, `moov` (one `avc1` track, an empty sample table, `mvex`), then
`moof` + `mdat` pairs with `default-base-is-moof` and a `tfdt` each, so every fragment carries its own start time
and a gap (the page was still) needs no sample at all.

The header's two duration fields (`mvhd`, `mehd`) are rewritten in place after each fragment (`duration_fields`),
so even a file whose writer died says how long it is.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from dataclasses import dataclass

TIMESCALE = 90_000  # media ticks a second (the usual video clock; 1 tick = 11.1 µs)
MOVIE_TIMESCALE = 1000  # mvhd and mehd: milliseconds

_MATRIX = struct.pack(">9I", 0x00010000, 0, 0, 0, 0x00010000, 0, 0, 0, 0x40000000)
_SYNC_FLAGS = 0x02000000  # sample_depends_on = 2 (an IDR)
_DELTA_FLAGS = 0x01010000  # sample_depends_on = 1, sample_is_non_sync_sample


@dataclass(frozen=True, slots=True)
class Sample:
    dts: int  # media ticks from the recording's start
    duration: int  # ticks, at least 1
    keyframe: bool
    data: bytes  # the access unit as length-prefixed NAL units (`to_length_prefixed`)


def nal_units(annexb: bytes) -> list[bytes]:
    """The NAL units of an Annex B access unit (start codes of 3 or 4 bytes), without their start codes."""
    units: list[bytes] = []
    start = annexb.find(b"\x00\x00\x01")
    while start >= 0:
        begin = start + 3
        nxt = annexb.find(b"\x00\x00\x01", begin)
        end = len(annexb) if nxt < 0 else (nxt - 1 if annexb[nxt - 1] == 0 else nxt)
        if end > begin:
            units.append(annexb[begin:end])
        start = nxt
    return units


def parameter_sets(annexb: bytes) -> tuple[bytes, bytes] | None:
    """The SPS and PPS of a keyframe's access unit, or None when it carries none."""
    sps = pps = None
    for unit in nal_units(annexb):
        kind = unit[0] & 0x1F
        if kind == 7 and sps is None:
            sps = unit
        elif kind == 8 and pps is None:
            pps = unit
    return (sps, pps) if sps is not None and pps is not None else None


def to_length_prefixed(annexb: bytes) -> bytes:
    """An access unit as MP4 stores it: 4-byte lengths, and the parameter sets left to the sample entry."""
    return b"".join(struct.pack(">I", len(u)) + u for u in nal_units(annexb) if (u[0] & 0x1F) not in (7, 8, 9))


def _box(kind: bytes, *payload: bytes) -> bytes:
    body = b"".join(payload)
    return struct.pack(">I", 8 + len(body)) + kind + body


def _full(kind: bytes, version: int, flags: int, *payload: bytes) -> bytes:
    return _box(kind, struct.pack(">I", (version << 24) | flags), *payload)


@dataclass(frozen=True, slots=True)
class Header:
    data: bytes
    mvhd_duration_at: int  # offset of mvhd's 32-bit duration (movie timescale)
    mehd_duration_at: int  # offset of mehd's 64-bit fragment duration (movie timescale)


def header(width: int, height: int, sps: bytes, pps: bytes) -> Header:
    """`ftyp` and `moov` for one H.264 track of `width` x `height`, its parameter sets in `avcC`."""
    ftyp = _box(b"ftyp", b"isom", struct.pack(">I", 0x200), b"isom", b"iso5", b"iso6", b"avc1", b"mp41")
    mvhd = _full(b"mvhd", 0, 0, struct.pack(">IIII", 0, 0, MOVIE_TIMESCALE, 0), struct.pack(">IH", 0x00010000, 0x0100),
                 bytes(10), _MATRIX, bytes(24), struct.pack(">I", 2))
    tkhd = _full(b"tkhd", 0, 3, struct.pack(">IIIII", 0, 0, 1, 0, 0), bytes(8), struct.pack(">hhhH", 0, 0, 0, 0),
                 _MATRIX, struct.pack(">II", width << 16, height << 16))
    mdhd = _full(b"mdhd", 0, 0, struct.pack(">IIIIHH", 0, 0, TIMESCALE, 0, 0x55C4, 0))
    hdlr = _full(b"hdlr", 0, 0, struct.pack(">I", 0), b"vide", bytes(12), b"framestream\0")
    vmhd = _full(b"vmhd", 0, 1, bytes(8))
    dinf = _box(b"dinf", _full(b"dref", 0, 0, struct.pack(">I", 1), _full(b"url ", 0, 1)))
    avcc = _box(b"avcC", bytes([1, sps[1], sps[2], sps[3], 0xFF, 0xE1]), struct.pack(">H", len(sps)), sps,
                bytes([1]), struct.pack(">H", len(pps)), pps)
    name = b"framestream H.264"
    avc1 = _box(b"avc1", bytes(6), struct.pack(">H", 1), bytes(16), struct.pack(">HH", width, height),
                struct.pack(">III", 0x00480000, 0x00480000, 0), struct.pack(">H", 1),
                bytes([len(name)]) + name + bytes(31 - len(name)), struct.pack(">Hh", 0x0018, -1), avcc)
    stbl = _box(b"stbl", _full(b"stsd", 0, 0, struct.pack(">I", 1), avc1), _full(b"stts", 0, 0, bytes(4)),
                _full(b"stsc", 0, 0, bytes(4)), _full(b"stsz", 0, 0, bytes(8)), _full(b"stco", 0, 0, bytes(4)))
    trak = _box(b"trak", tkhd, _box(b"mdia", mdhd, hdlr, _box(b"minf", vmhd, dinf, stbl)))
    mehd = _full(b"mehd", 1, 0, struct.pack(">Q", 0))
    trex = _full(b"trex", 0, 0, struct.pack(">IIIII", 1, 1, 0, 0, 0))
    moov = _box(b"moov", mvhd, trak, _box(b"mvex", mehd, trex))
    data = ftyp + moov
    mvhd_at = len(ftyp) + 8 + 24  # moov header, then mvhd: size, type, version+flags, creation, modification, scale
    mehd_at = data.index(b"mehd") + 8  # past type and version+flags
    return Header(data, mvhd_at, mehd_at)


def fragment(sequence: int, samples: Sequence[Sample]) -> bytes:
    """One `moof` + `mdat` holding `samples` (consecutive: each starts where the one before ends)."""
    if not samples:
        raise ValueError("a fragment needs at least one sample")
    entries = b"".join(struct.pack(">III", s.duration, len(s.data), _SYNC_FLAGS if s.keyframe else _DELTA_FLAGS)
                       for s in samples)

    def moof(data_offset: int) -> bytes:
        trun = _full(b"trun", 0, 0x000701, struct.pack(">Ii", len(samples), data_offset), entries)
        traf = _box(b"traf", _full(b"tfhd", 0, 0x020000, struct.pack(">I", 1)),
                    _full(b"tfdt", 1, 0, struct.pack(">Q", samples[0].dts)), trun)
        return _box(b"moof", _full(b"mfhd", 0, 0, struct.pack(">I", sequence)), traf)

    size = len(moof(0))
    mdat = _box(b"mdat", *(s.data for s in samples))
    return moof(size + 8) + mdat


def duration_fields(end_ticks: int) -> tuple[bytes, bytes]:
    """What to write at `Header.mvhd_duration_at` and `Header.mehd_duration_at` for a stream ending at `end_ticks`."""
    ms = end_ticks * MOVIE_TIMESCALE // TIMESCALE
    return struct.pack(">I", min(ms, 0xFFFFFFFF)), struct.pack(">Q", ms)


def ticks(microseconds: int) -> int:
    return microseconds * TIMESCALE // 1_000_000


def microseconds(ticks_: int) -> int:
    return ticks_ * 1_000_000 // TIMESCALE


def whole_length(path: str) -> int:
    """How many bytes of the file at `path` are whole top-level boxes, a `moof` counting only with its whole `mdat`:
    a writer killed in the middle of a fragment leaves a tail that demuxers refuse (FFmpeg fails the whole file on
    a cut `moof`, and the decoder on a cut sample), and cutting it there leaves every whole fragment playable."""
    end = whole = 0
    with open(path, "rb") as f:
        f.seek(0, 2)
        size = f.tell()
        while end + 8 <= size:
            f.seek(end)
            head = f.read(16)
            length = struct.unpack(">I", head[:4])[0]
            if length == 1 and len(head) >= 16:
                length = struct.unpack(">Q", head[8:16])[0]
            if length < 8 or end + length > size:
                break
            end += length
            if head[4:8] != b"moof":  # (a moof is whole once its mdat is)
                whole = end
    return whole
