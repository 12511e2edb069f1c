"""libx264 called directly (ctypes), for what FFmpeg's wrapper cannot do: a quantizer chosen per picture.

Constant QP spares x264 the low-resolution complexity estimate that CRF runs on every picture (2.2 ms of about
10 on a 2560x1600 scroll), but only a QP set per picture (`x264_picture_t.i_qpplus1`) lets a still picture be
sharpened at a lower one, and FFmpeg's wrapper never sets it (nor can `x264_encoder_reconfig` change a constant
QP). So the encoder talks to libx264 itself: the very library PyAV's FFmpeg links, loaded from PyAV's wheel.

The structs below are x264.h of build 165 (the symbol `x264_encoder_open_165` names the build). A struct laid
out wrong would write where it should not, so opening checks the layout first: defaults and parsed values read
back at the offsets below must be the ones x264 documents, and the buffers x264 fills are larger than the
structs by a margin. Every option goes through `x264_param_parse`, x264's own names and checks.
"""

from __future__ import annotations

import ctypes
import glob
import math
import os
import threading
import weakref
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TypeVar

import av
import numpy as np

X264_BUILD = 165
_CSP_I420 = 0x0002
_TYPE_AUTO, _TYPE_IDR = 0x0000, 0x0001
_MBINFO_CONSTANT = 1
_RC_CQP, _RC_CRF = 0, 1
_SLACK = 1024  # bytes beyond each struct that x264 writes (memset) or fills: a margin for a layout check missed


class X264Error(RuntimeError):
    """libx264 refused an option or a picture, or is not the build these structs describe."""


class _Vui(ctypes.Structure):
    _fields_ = [(name, ctypes.c_int) for name in (
        "i_sar_height", "i_sar_width", "i_overscan", "i_vidformat", "b_fullrange", "i_colorprim", "i_transfer",
        "i_colmatrix", "i_chroma_loc")]


class _Analyse(ctypes.Structure):
    _fields_ = [
        ("intra", ctypes.c_uint), ("inter", ctypes.c_uint), ("b_transform_8x8", ctypes.c_int),
        ("i_weighted_pred", ctypes.c_int), ("b_weighted_bipred", ctypes.c_int), ("i_direct_mv_pred", ctypes.c_int),
        ("i_chroma_qp_offset", ctypes.c_int), ("i_me_method", ctypes.c_int), ("i_me_range", ctypes.c_int),
        ("i_mv_range", ctypes.c_int), ("i_mv_range_thread", ctypes.c_int), ("i_subpel_refine", ctypes.c_int),
        ("b_chroma_me", ctypes.c_int), ("b_mixed_references", ctypes.c_int), ("i_trellis", ctypes.c_int),
        ("b_fast_pskip", ctypes.c_int), ("b_dct_decimate", ctypes.c_int), ("i_noise_reduction", ctypes.c_int),
        ("f_psy_rd", ctypes.c_float), ("f_psy_trellis", ctypes.c_float), ("b_psy", ctypes.c_int),
        ("b_mb_info", ctypes.c_int), ("b_mb_info_update", ctypes.c_int), ("i_luma_deadzone", ctypes.c_int * 2),
        ("b_psnr", ctypes.c_int), ("b_ssim", ctypes.c_int),
    ]


class _RateControl(ctypes.Structure):
    _fields_ = [
        ("i_rc_method", ctypes.c_int), ("i_qp_constant", ctypes.c_int), ("i_qp_min", ctypes.c_int),
        ("i_qp_max", ctypes.c_int), ("i_qp_step", ctypes.c_int), ("i_bitrate", ctypes.c_int),
        ("f_rf_constant", ctypes.c_float), ("f_rf_constant_max", ctypes.c_float),
        ("f_rate_tolerance", ctypes.c_float), ("i_vbv_max_bitrate", ctypes.c_int),
        ("i_vbv_buffer_size", ctypes.c_int), ("f_vbv_buffer_init", ctypes.c_float), ("f_ip_factor", ctypes.c_float),
        ("f_pb_factor", ctypes.c_float), ("b_filler", ctypes.c_int), ("i_aq_mode", ctypes.c_int),
        ("f_aq_strength", ctypes.c_float), ("b_mb_tree", ctypes.c_int), ("i_lookahead", ctypes.c_int),
        ("b_stat_write", ctypes.c_int), ("psz_stat_out", ctypes.c_char_p), ("b_stat_read", ctypes.c_int),
        ("psz_stat_in", ctypes.c_char_p), ("f_qcompress", ctypes.c_float), ("f_qblur", ctypes.c_float),
        ("f_complexity_blur", ctypes.c_float), ("zones", ctypes.c_void_p), ("i_zones", ctypes.c_int),
        ("psz_zones", ctypes.c_char_p),
    ]


class _MasteringDisplay(ctypes.Structure):
    _fields_ = [*((name, ctypes.c_int) for name in (
        "b_mastering_display", "i_green_x", "i_green_y", "i_blue_x", "i_blue_y", "i_red_x", "i_red_y", "i_white_x",
        "i_white_y")), ("i_display_max", ctypes.c_int64), ("i_display_min", ctypes.c_int64)]


class _Param(ctypes.Structure):
    """x264_param_t (build 165), field for field."""

    _fields_ = [
        ("cpu", ctypes.c_uint32), ("i_threads", ctypes.c_int), ("i_lookahead_threads", ctypes.c_int),
        ("b_sliced_threads", ctypes.c_int), ("b_deterministic", ctypes.c_int), ("b_cpu_independent", ctypes.c_int),
        ("i_sync_lookahead", ctypes.c_int), ("i_width", ctypes.c_int), ("i_height", ctypes.c_int),
        ("i_csp", ctypes.c_int), ("i_bitdepth", ctypes.c_int), ("i_level_idc", ctypes.c_int),
        ("i_frame_total", ctypes.c_int), ("i_nal_hrd", ctypes.c_int), ("vui", _Vui),
        ("i_frame_reference", ctypes.c_int), ("i_dpb_size", ctypes.c_int), ("i_keyint_max", ctypes.c_int),
        ("i_keyint_min", ctypes.c_int), ("i_scenecut_threshold", ctypes.c_int), ("b_intra_refresh", ctypes.c_int),
        ("i_bframe", ctypes.c_int), ("i_bframe_adaptive", ctypes.c_int), ("i_bframe_bias", ctypes.c_int),
        ("i_bframe_pyramid", ctypes.c_int), ("b_open_gop", ctypes.c_int), ("b_bluray_compat", ctypes.c_int),
        ("i_avcintra_class", ctypes.c_int), ("i_avcintra_flavor", ctypes.c_int),
        ("b_deblocking_filter", ctypes.c_int), ("i_deblocking_filter_alphac0", ctypes.c_int),
        ("i_deblocking_filter_beta", ctypes.c_int), ("b_cabac", ctypes.c_int), ("i_cabac_init_idc", ctypes.c_int),
        ("b_interlaced", ctypes.c_int), ("b_constrained_intra", ctypes.c_int), ("i_cqm_preset", ctypes.c_int),
        ("psz_cqm_file", ctypes.c_char_p), ("cqm_4", ctypes.c_uint8 * 64), ("cqm_8", ctypes.c_uint8 * 256),
        ("pf_log", ctypes.c_void_p), ("p_log_private", ctypes.c_void_p), ("i_log_level", ctypes.c_int),
        ("b_full_recon", ctypes.c_int), ("psz_dump_yuv", ctypes.c_char_p), ("analyse", _Analyse),
        ("rc", _RateControl), ("crop_rect", ctypes.c_int * 4), ("i_frame_packing", ctypes.c_int),
        ("mastering_display", _MasteringDisplay), ("content_light_level", ctypes.c_int * 3),
        ("i_alternative_transfer", ctypes.c_int), ("b_aud", ctypes.c_int), ("b_repeat_headers", ctypes.c_int),
        ("b_annexb", ctypes.c_int), ("i_sps_id", ctypes.c_int), ("b_vfr_input", ctypes.c_int),
        ("b_pulldown", ctypes.c_int), ("i_fps_num", ctypes.c_uint32), ("i_fps_den", ctypes.c_uint32),
        ("i_timebase_num", ctypes.c_uint32), ("i_timebase_den", ctypes.c_uint32), ("b_tff", ctypes.c_int),
        ("b_pic_struct", ctypes.c_int), ("b_fake_interlaced", ctypes.c_int), ("b_stitchable", ctypes.c_int),
        ("b_opencl", ctypes.c_int), ("i_opencl_device", ctypes.c_int), ("opencl_device_id", ctypes.c_void_p),
        ("psz_clbin_file", ctypes.c_char_p), ("i_slice_max_size", ctypes.c_int), ("i_slice_max_mbs", ctypes.c_int),
        ("i_slice_min_mbs", ctypes.c_int), ("i_slice_count", ctypes.c_int), ("i_slice_count_max", ctypes.c_int),
        ("param_free", ctypes.c_void_p), ("nalu_process", ctypes.c_void_p), ("opaque", ctypes.c_void_p),
    ]


class _Image(ctypes.Structure):
    _fields_ = [("i_csp", ctypes.c_int), ("i_plane", ctypes.c_int), ("i_stride", ctypes.c_int * 4),
                ("plane", ctypes.c_void_p * 4)]


class _ImageProperties(ctypes.Structure):
    _fields_ = [("quant_offsets", ctypes.c_void_p), ("quant_offsets_free", ctypes.c_void_p),
                ("mb_info", ctypes.c_void_p), ("mb_info_free", ctypes.c_void_p), ("f_ssim", ctypes.c_double),
                ("f_psnr_avg", ctypes.c_double), ("f_psnr", ctypes.c_double * 3), ("f_crf_avg", ctypes.c_double)]


class _Picture(ctypes.Structure):
    """x264_picture_t (build 165) up to its properties; what follows (HRD timing, SEI, opaque) is left to
    the slack of the buffer it lives in."""

    _fields_ = [("i_type", ctypes.c_int), ("i_qpplus1", ctypes.c_int), ("i_pic_struct", ctypes.c_int),
                ("b_keyframe", ctypes.c_int), ("i_pts", ctypes.c_int64), ("i_dts", ctypes.c_int64),
                ("param", ctypes.c_void_p), ("img", _Image), ("prop", _ImageProperties)]


class _Nal(ctypes.Structure):
    _fields_ = [("i_ref_idc", ctypes.c_int), ("i_type", ctypes.c_int), ("b_long_startcode", ctypes.c_int),
                ("i_first_mb", ctypes.c_int), ("i_last_mb", ctypes.c_int), ("i_payload", ctypes.c_int),
                ("p_payload", ctypes.c_void_p), ("i_padding", ctypes.c_int)]


_S = TypeVar("_S", bound=ctypes.Structure)


def _in_slack(struct: type[_S]) -> _S:
    """A zeroed `struct` at the start of a buffer _SLACK bytes longer (the buffer lives as long as it)."""
    buffer = ctypes.create_string_buffer(ctypes.sizeof(struct) + _SLACK)
    value = struct.from_buffer(buffer)
    value._buffer = buffer
    return value


_library: ctypes.CDLL | None = None
_library_lock = threading.Lock()


def _load() -> ctypes.CDLL:
    """PyAV's own libx264 (already mapped: its FFmpeg links it), its functions typed."""
    global _library
    with _library_lock:
        if _library is not None:
            return _library
        libs = os.path.join(os.path.dirname(av.__file__), os.pardir, "av.libs")
        found = sorted(glob.glob(os.path.join(libs, "libx264*.so*")))
        if not found:
            raise X264Error(f"no libx264 in PyAV's wheel ({os.path.normpath(libs)})")
        lib = ctypes.CDLL(found[0])
        try:
            open_ = getattr(lib, f"x264_encoder_open_{X264_BUILD}")
        except AttributeError as exc:
            raise X264Error(f"{os.path.basename(found[0])} is not libx264 build {X264_BUILD}") from exc
        param_p, pic_p = ctypes.POINTER(_Param), ctypes.POINTER(_Picture)
        lib.x264_param_default_preset.argtypes = [param_p, ctypes.c_char_p, ctypes.c_char_p]
        lib.x264_param_parse.argtypes = [param_p, ctypes.c_char_p, ctypes.c_char_p]
        lib.x264_param_apply_profile.argtypes = [param_p, ctypes.c_char_p]
        lib.x264_param_cleanup.argtypes = [param_p]
        lib.x264_picture_init.argtypes = [pic_p]
        open_.argtypes = [param_p]
        open_.restype = ctypes.c_void_p
        lib.x264_encoder_parameters.argtypes = [ctypes.c_void_p, param_p]
        lib.x264_encoder_reconfig.argtypes = [ctypes.c_void_p, param_p]
        lib.x264_encoder_encode.argtypes = [
            ctypes.c_void_p, ctypes.POINTER(ctypes.POINTER(_Nal)), ctypes.POINTER(ctypes.c_int), pic_p, pic_p]
        lib.x264_encoder_close.argtypes = [ctypes.c_void_p]
        lib.x264_encoder_close.restype = None
        _library = lib
        return lib


def _open_encoder(lib: ctypes.CDLL, param: _Param) -> int | None:
    handle: int | None = getattr(lib, f"x264_encoder_open_{X264_BUILD}")(ctypes.byref(param))
    return handle


def _check_layout(param: _Param) -> None:
    """x264_param_default_preset's documented values, read back at our offsets from the start to the end."""
    expected = {
        "i_csp": (param.i_csp, _CSP_I420), "i_bitdepth": (param.i_bitdepth, 8),
        "i_keyint_max": (param.i_keyint_max, 250), "i_keyint_min": (param.i_keyint_min, 0),
        "analyse.i_luma_deadzone": (tuple(param.analyse.i_luma_deadzone), (21, 11)),
        "rc.i_rc_method": (param.rc.i_rc_method, _RC_CRF), "rc.f_rf_constant": (param.rc.f_rf_constant, 23.0),
        "rc.f_ip_factor": (round(param.rc.f_ip_factor, 3), 1.4),
        "rc.f_qcompress": (round(param.rc.f_qcompress, 3), 0.6),
        "b_repeat_headers": (param.b_repeat_headers, 1), "b_annexb": (param.b_annexb, 1),
        "i_fps_num": (param.i_fps_num, 25), "i_fps_den": (param.i_fps_den, 1),
    }
    wrong = {name: got for name, (got, want) in expected.items() if got != want}
    if wrong:
        raise X264Error(f"libx264's parameters are not laid out as build {X264_BUILD}'s x264.h: {wrong}")


@dataclass(frozen=True, slots=True)
class ConstantQuantizer:
    """Every picture at the QP `encode` is given; no complexity estimate, no rate cap."""

    # The QPs pictures may use. Under a constant QP x264 clips every QP to [qp_i, qp_b]: the constant sits in the
    # middle, the I/P ratio reaches down to `lowest` and the P/B ratio (no B pictures here) up to `highest`. x264
    # takes ratios of at most 10, which is 19 QPs each way.
    lowest: int = 10
    highest: int = 45

    def __post_init__(self) -> None:
        if not 0 < self.lowest <= self.highest <= 51 or self.highest - self.lowest > 38:
            raise ValueError(f"QP range {self.lowest}-{self.highest}: want 1 <= lowest <= highest <= 51, span <= 38")

    @property
    def options(self) -> dict[str, str]:
        middle = (self.lowest + self.highest + 1) // 2
        return {"qp": str(middle), "ipratio": f"{2 ** ((middle - self.lowest) / 6):.6f}",
                "pbratio": f"{2 ** ((self.highest - middle) / 6):.6f}"}


@dataclass(frozen=True, slots=True)
class ConstantRateFactor:
    """CRF, which `reconfigure` may change while it runs, with an optional cap (x264's VBV)."""

    crf: float
    max_kbps: int | None = None
    buffer_kbit: int | None = None


class X264Encoder:
    """One libx264 encoder: I420 pictures in, one Annex B access unit out per picture (zerolatency)."""

    def __init__(
        self,
        width: int,
        height: int,
        *,
        rate: ConstantQuantizer | ConstantRateFactor,
        options: Mapping[str, str],
        preset: str = "ultrafast",
        tune: str = "zerolatency",
        profile: str = "baseline",
        unchanged_maps: bool = False,
    ) -> None:
        lib = _load()
        self._lib = lib
        self.width, self.height = width, height
        param = _in_slack(_Param)
        if lib.x264_param_default_preset(ctypes.byref(param), preset.encode(), tune.encode()) < 0:
            raise X264Error(f"unknown preset or tune: {preset}, {tune}")
        _check_layout(param)
        param.i_width, param.i_height, param.i_csp = width, height, _CSP_I420
        param.analyse.b_mb_info = int(unchanged_maps)  # x264 tracks what it needs to skip unchanged macroblocks
        settings = dict(options)
        if isinstance(rate, ConstantQuantizer):
            settings |= rate.options  # each picture then says its own QP
        else:
            settings["crf"] = f"{rate.crf:g}"
            if rate.max_kbps is not None:
                settings["vbv-maxrate"] = str(rate.max_kbps)
                settings["vbv-bufsize"] = str(rate.buffer_kbit or rate.max_kbps)
        for name, value in settings.items():
            self._parse(param, name, value)
        if "fps" in settings and param.i_fps_num / max(1, param.i_fps_den) != float(settings["fps"]):
            raise X264Error(f"libx264 did not take fps={settings['fps']}: layout check failed")
        if lib.x264_param_apply_profile(ctypes.byref(param), profile.encode()) < 0:
            raise X264Error(f"profile {profile} does not fit these options")
        handle = _open_encoder(lib, param)
        if not handle:
            lib.x264_param_cleanup(ctypes.byref(param))
            raise X264Error(f"libx264 refused to open {width}x{height} with {settings}")
        self._handle: int | None = handle
        self._param = param
        self._rate = rate
        self._closer = weakref.finalize(self, _close, lib, handle, param)
        if isinstance(rate, ConstantQuantizer):
            opened = _in_slack(_Param)
            lib.x264_encoder_parameters(handle, ctypes.byref(opened))
            if opened.rc.i_rc_method != _RC_CQP or opened.rc.i_qp_min > rate.lowest or \
                    opened.rc.i_qp_max < rate.highest:
                self.close()
                raise X264Error(f"libx264 took QPs {opened.rc.i_qp_min}-{opened.rc.i_qp_max}, "
                                f"not {rate.lowest}-{rate.highest}")
        self._picture = _in_slack(_Picture)
        self._out = _in_slack(_Picture)
        self._nals = ctypes.POINTER(_Nal)()
        self._nal_count = ctypes.c_int()
        self._mb_width, self._mb_height = -(-width // 16), -(-height // 16)
        self._mb_info = np.zeros((self._mb_height, self._mb_width), np.uint8)

    def _parse(self, param: _Param, name: str, value: str) -> None:
        result = self._lib.x264_param_parse(ctypes.byref(param), name.encode(), value.encode())
        if result != 0:
            raise X264Error(f"libx264 option {name}={value}: " + ("unknown name" if result == -1 else "bad value"))

    def reconfigure(self, crf: float | None = None, max_kbps: int | None = None, buffer_kbit: int | None = None,
                    ) -> bool:
        """Change CRF or the cap of a CRF encoder before its next picture (x264_encoder_reconfig)."""
        if self._handle is None or not isinstance(self._rate, ConstantRateFactor):
            return False
        param = self._param
        if crf is not None:
            self._parse(param, "crf", f"{crf:g}")
        if max_kbps is not None:
            self._parse(param, "vbv-maxrate", str(max_kbps))
            self._parse(param, "vbv-bufsize", str(buffer_kbit or max_kbps))
        return bool(self._lib.x264_encoder_reconfig(self._handle, ctypes.byref(param)) == 0)

    def encode(
        self,
        i420: np.ndarray,
        pts: int,
        *,
        keyframe: bool = False,
        qp: int | None = None,
        unchanged: np.ndarray | None = None,
    ) -> tuple[bytes, bool]:
        """Encode one I420 picture (one contiguous buffer: Y, then U, then V) and return (access unit, IDR?).

        `qp` forces the picture's quantizer (constant-QP encoders need it on every picture). `unchanged`, a
        boolean (mb_height, mb_width) map, tells x264 which macroblocks are as in the picture before so it skips
        them; None analyses all of them.
        """
        if self._handle is None:
            raise X264Error("encoder is closed")
        if i420.dtype != np.uint8 or not i420.flags.c_contiguous or i420.size != self.width * self.height * 3 // 2:
            raise ValueError(f"not a contiguous {self.width}x{self.height} I420 picture")
        rate = self._rate
        if isinstance(rate, ConstantQuantizer) and (qp is None or not rate.lowest <= qp <= rate.highest):
            raise ValueError(f"qp must be within {rate.lowest}-{rate.highest}, got {qp}")
        pic = self._picture
        self._lib.x264_picture_init(ctypes.byref(pic))
        pic.i_type = _TYPE_IDR if keyframe else _TYPE_AUTO
        pic.i_qpplus1 = 0 if qp is None else qp + 1
        pic.i_pts = pts
        base, luma = i420.ctypes.data, self.width * self.height
        pic.img.i_csp, pic.img.i_plane = _CSP_I420, 3
        pic.img.i_stride[0], pic.img.i_stride[1], pic.img.i_stride[2] = self.width, self.width // 2, self.width // 2
        pic.img.plane[0], pic.img.plane[1], pic.img.plane[2] = base, base + luma, base + luma + luma // 4
        if unchanged is not None and self._param.analyse.b_mb_info:
            if unchanged.shape != self._mb_info.shape:
                raise ValueError(f"unchanged map is {unchanged.shape}, want {self._mb_info.shape}")
            np.multiply(unchanged, _MBINFO_CONSTANT, out=self._mb_info, casting="unsafe")
            pic.prop.mb_info = self._mb_info.ctypes.data  # read during this call only; x264 frees nothing of ours
        size = self._lib.x264_encoder_encode(
            self._handle, ctypes.byref(self._nals), ctypes.byref(self._nal_count), ctypes.byref(pic),
            ctypes.byref(self._out))
        if size < 0:
            raise X264Error(f"libx264 failed to encode a picture ({size})")
        if size == 0 or self._nal_count.value == 0:
            raise X264Error("libx264 held a picture back (zerolatency should not)")
        out = self._out
        # x264.h: the payloads of all NAL units of one call are sequential in memory.
        return ctypes.string_at(self._nals[0].p_payload, size), bool(out.b_keyframe)

    def macroblocks(self) -> tuple[int, int]:
        """(rows, columns) of 16x16 macroblocks: the shape of `encode`'s `unchanged` map."""
        return self._mb_height, self._mb_width

    def close(self) -> None:
        """Free the encoder now (its threads stop); also done when it is collected."""
        self._handle = None
        self._closer()


def _close(lib: ctypes.CDLL, handle: int, param: _Param) -> None:
    lib.x264_encoder_close(handle)
    lib.x264_param_cleanup(ctypes.byref(param))


def unchanged_map(rows: int, columns: int, changed: list[tuple[int, int, int, int]]) -> np.ndarray:
    """A (rows, columns) macroblock map, True where no rectangle (x, y, width, height) in pixels reaches."""
    keep = np.ones((rows, columns), bool)
    for x, y, w, h in changed:
        left, top = max(0, x // 16), max(0, y // 16)
        right, bottom = min(columns, math.ceil((x + w) / 16)), min(rows, math.ceil((y + h) / 16))
        if right > left and bottom > top:
            keep[top:bottom, left:right] = False
    return keep
