"""H.264 bit syntax without an encoder: Exp-Golomb bits, emulation prevention, and the few fields of an SPS, a PPS
and a slice header that placing slices into a picture needs (ITU-T H.264 7.3). Pure: bytes in, values out.

Only what libx264 writes for our streams is read (progressive frames, one slice group, CAVLC or CABAC); anything
else raises `H264SyntaxError` rather than being misread.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from framestream.core.h264 import NAL_IDR

SLICE_P = 0
SLICE_I = 2

_EMULATED = re.compile(b"\x00\x00(?=[\x00-\x03])")


class H264SyntaxError(ValueError):
    pass


def escape(rbsp: bytes) -> bytes:
    """RBSP -> NAL payload: a 0x03 after every two zero bytes that a byte <= 3 follows (7.4.1)."""
    return _EMULATED.sub(b"\x00\x00\x03", rbsp)


def unescape(payload: bytes) -> bytes:
    """NAL payload -> RBSP: every 00 00 03 loses its 03 (a literal 00 00 03 was written as 00 00 03 03)."""
    return payload.replace(b"\x00\x00\x03", b"\x00\x00")


class BitReader:
    """Reads an RBSP most significant bit first."""

    def __init__(self, rbsp: bytes) -> None:
        self._value = int.from_bytes(rbsp, "big")
        self.size = len(rbsp) * 8
        self.position = 0

    def u(self, bits: int) -> int:
        if bits == 0:
            return 0
        if self.position + bits > self.size:
            raise H264SyntaxError("read past the end of the unit")
        self.position += bits
        return (self._value >> (self.size - self.position)) & ((1 << bits) - 1)

    def ue(self) -> int:
        zeros = 0
        while self.u(1) == 0:
            zeros += 1
            if zeros > 31:
                raise H264SyntaxError("Exp-Golomb code longer than 32 bits")
        return (1 << zeros) - 1 + self.u(zeros)

    def se(self) -> int:
        code = self.ue()
        return (code + 1) // 2 if code % 2 else -(code // 2)

    def rest(self) -> tuple[int, int]:
        """(bits, count): what follows the position up to, not including, the RBSP stop bit."""
        trailing = self._value & -self._value
        if not trailing:
            raise H264SyntaxError("no RBSP stop bit")
        end = self.size - trailing.bit_length()  # the stop bit's position
        if end < self.position:
            raise H264SyntaxError("the stop bit lies inside the header")
        count = end - self.position
        return (self._value >> (self.size - end)) & ((1 << count) - 1), count


class BitWriter:
    """Collects bits as one integer; `rbsp()` ends them with the stop bit and zero alignment."""

    def __init__(self) -> None:
        self.value = 0
        self.count = 0

    def u(self, bits: int, value: int) -> None:
        if value < 0 or value >> bits:
            raise ValueError(f"{value} does not fit {bits} bits")
        self.value = (self.value << bits) | value
        self.count += bits

    def ue(self, value: int) -> None:
        code = value + 1
        self.u(2 * code.bit_length() - 1, code)

    def se(self, value: int) -> None:
        self.ue(2 * value - 1 if value > 0 else -2 * value)

    def rbsp(self) -> bytes:
        total = self.count + 1
        pad = -total % 8
        return (((self.value << 1) | 1) << pad).to_bytes((total + pad) // 8, "big")


@dataclass(frozen=True, slots=True)
class Sps:
    sps_id: int
    log2_max_frame_num: int
    poc_type: int
    log2_max_poc_lsb: int  # when poc_type is 0
    mb_width: int
    mb_height: int


@dataclass(frozen=True, slots=True)
class Pps:
    pps_id: int
    sps_id: int
    cabac: bool
    pic_init_qp: int
    chroma_qp_offset: int
    deblocking_control: bool
    bottom_field_poc: bool
    redundant_pic_cnt: bool
    weighted_pred: bool
    references: int = 1  # num_ref_idx_l0_default_active_minus1 + 1
    constrained_intra_pred: bool = False


_HIGH_PROFILES = {100, 110, 122, 244, 44, 83, 86, 118, 128, 138, 139, 134, 135}


def parse_sps(unit: bytes) -> Sps:
    """An SPS NAL unit (its header byte included)."""
    r = BitReader(unescape(unit[1:]))
    profile = r.u(8)
    r.u(16)  # constraint flags, level
    sps_id = r.ue()
    if profile in _HIGH_PROFILES:
        chroma = r.ue()
        if chroma == 3:
            r.u(1)
        r.ue(), r.ue(), r.u(1)  # bit depths, transform bypass
        if r.u(1):
            raise H264SyntaxError("scaling matrices in the SPS are not read")
        if chroma != 1:
            raise H264SyntaxError("only 4:2:0")
    log2_max_frame_num = r.ue() + 4
    poc_type = r.ue()
    log2_max_poc_lsb = 0
    if poc_type == 0:
        log2_max_poc_lsb = r.ue() + 4
    elif poc_type == 1:
        raise H264SyntaxError("picture order count type 1 is not read")
    r.ue()  # max_num_ref_frames
    r.u(1)  # gaps_in_frame_num_value_allowed_flag
    mb_width = r.ue() + 1
    mb_height = r.ue() + 1
    if not r.u(1):
        raise H264SyntaxError("only progressive frames (frame_mbs_only_flag)")
    return Sps(sps_id, log2_max_frame_num, poc_type, log2_max_poc_lsb, mb_width, mb_height)


def parse_pps(unit: bytes) -> Pps:
    """A PPS NAL unit (its header byte included)."""
    r = BitReader(unescape(unit[1:]))
    pps_id, sps_id = r.ue(), r.ue()
    cabac = bool(r.u(1))
    bottom_field_poc = bool(r.u(1))
    if r.ue() != 0:
        raise H264SyntaxError("slice groups are not read")
    references = r.ue() + 1
    r.ue()  # num_ref_idx_l1_default_active_minus1
    weighted_pred = bool(r.u(1))
    r.u(2)  # weighted_bipred_idc
    pic_init_qp = 26 + r.se()
    r.se()  # pic_init_qs
    chroma_qp_offset = r.se()
    deblocking_control = bool(r.u(1))
    constrained_intra_pred = bool(r.u(1))
    redundant = bool(r.u(1))
    return Pps(pps_id, sps_id, cabac, pic_init_qp, chroma_qp_offset, deblocking_control, bottom_field_poc, redundant,
               weighted_pred, references, constrained_intra_pred)


@dataclass(frozen=True, slots=True)
class ForeignSlice:
    """An I or P slice of another encoder's picture, read up to its data: what placing it elsewhere needs. A P
    slice predicts from one reference picture (no ref_idx in its macroblocks) and changes no reference list."""

    kind: int  # SLICE_I or SLICE_P
    first_mb: int
    qp: int
    deblocking_idc: int
    alpha_offset: int  # slice_alpha_c0_offset_div2
    beta_offset: int
    data: int  # slice_data() bits up to the stop bit, most significant first
    data_bits: int


def parse_foreign_slice(unit: bytes, sps: Sps, pps: Pps) -> ForeignSlice:
    """An I or P slice NAL unit (IDR or not; its header byte included) written against `sps` and `pps`."""
    if pps.cabac:
        raise H264SyntaxError("CABAC slices are not placed (their data starts byte-aligned, ours would not)")
    if pps.weighted_pred:
        raise H264SyntaxError("slices with weighted prediction are not placed")
    kind, ref_idc = unit[0] & 0x1F, unit[0] >> 5 & 3
    r = BitReader(unescape(unit[1:]))
    first_mb = r.ue()
    slice_type = r.ue() % 5
    if slice_type not in (SLICE_I, SLICE_P):
        raise H264SyntaxError(f"slice type {slice_type} is not placed (I and P only)")
    if r.ue() != pps.pps_id:
        raise H264SyntaxError("slice of another PPS")
    r.u(sps.log2_max_frame_num)
    if kind == NAL_IDR:
        r.ue()  # idr_pic_id
    if sps.poc_type == 0:
        r.u(sps.log2_max_poc_lsb)
        if pps.bottom_field_poc:
            r.se()
    if pps.redundant_pic_cnt:
        r.ue()
    if slice_type == SLICE_P:
        references = r.ue() + 1 if r.u(1) else pps.references  # num_ref_idx_active_override_flag
        if references != 1:
            raise H264SyntaxError(f"a P slice of {references} references (one only: no ref_idx is coded)")
        if r.u(1):
            raise H264SyntaxError("reference list modifications are not carried over")
    if ref_idc:
        if kind == NAL_IDR:
            r.u(2)  # no_output_of_prior_pics_flag, long_term_reference_flag
        elif r.u(1):
            raise H264SyntaxError("memory management operations are not carried over")
    qp = pps.pic_init_qp + r.se()
    idc, alpha, beta = 0, 0, 0
    if pps.deblocking_control:
        idc = r.ue()
        if idc != 1:
            alpha, beta = r.se(), r.se()
    data, count = r.rest()
    return ForeignSlice(slice_type, first_mb, qp, idc, alpha, beta, data, count)
