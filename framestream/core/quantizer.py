"""Each picture's quantizer, as x264's CRF would choose it, without the estimate CRF pays for on every picture.

x264's CRF sets a picture's quantizer from its complexity: qscale = complexity^(1 - qcompress) / rate_factor,
the complexity being a blurred low-resolution SATD that x264 computes before every picture (2.2 ms of a 2560x1600
scroll picture, docs/performance.md). This policy keeps CRF's formula and takes the complexity from pictures
already encoded instead: a picture of `size` bits at quantizer scale q has complexity about size * q (the
classic rate model R = X / Q), blurred over the pictures before as x264 blurs it. A change in what the page does
so reaches the quantizer one picture late, which a screen stream does not notice.

Keyframes follow CRF too: the mean quantizer of the P pictures so far, less the I/P offset (x264's ip_factor).
Refinements (a still picture sharpened) use their own fixed quantizer.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

_IP_OFFSET = 6 * math.log2(1.4)  # x264's default ip_factor 1.4, in QP
# Fitted to the quantizers x264's CRF 27 chose on 2560x1600 pictures (docs/performance.md, "Constant QP"): QP 18
# for a text page scrolling and a box moving over it (complexity about 1.6 bits x qscale a macroblock), 26 for
# a 1280x720 video. x264 itself never went below CRF - 9 on them; neither does this.
_SLOPE = 1.53  # QP per doubling of complexity: x264's 6 * (1 - qcompress), with qcompress 0.745
_BASE_COMPLEXITY = 93.0  # the complexity at which the quantizer equals the CRF
_FLOOR_BELOW_CRF = 9


def qscale(qp: float) -> float:
    """H.264's quantizer scale (x264's qp2qscale)."""
    return float(0.85 * 2.0 ** ((qp - 12.0) / 6.0))


@dataclass(frozen=True, slots=True)
class QuantizerRange:
    crf: float  # the quality of moving pictures, on CRF's scale
    refine_qp: int  # still pictures made sharp
    lowest: int = 10
    highest: int = 45


class QuantizerPolicy:
    """Chooses the quantizer of each next picture (`next`) and learns from each encoded one (`encoded`)."""

    def __init__(self, quantizers: QuantizerRange, macroblocks: int) -> None:
        self.range = quantizers
        self._macroblocks = max(1, macroblocks)
        self._complexity_sum = 0.0  # x264's short_term_cplxsum and cplxcount: a geometric blur of complexity
        self._complexity_count = 0.0
        self._p_qp_sum = 0.0  # x264's accum_p_qp and accum_p_norm: the mean QP that keyframes derive from
        self._p_qp_norm = 0.0

    def _clip(self, qp: float) -> int:
        return max(self.range.lowest, min(self.range.highest, round(qp)))

    def motion_qp(self) -> float:
        if self._complexity_count == 0:
            return self.range.crf
        complexity = self._complexity_sum / self._complexity_count
        qp = self.range.crf + _SLOPE * math.log2(max(complexity, 1e-6) / _BASE_COMPLEXITY)
        return max(self.range.crf - _FLOOR_BELOW_CRF, qp)

    def next(self, *, keyframe: bool, refinement: bool) -> int:
        if refinement:
            return self._clip(self.range.refine_qp)
        if keyframe:
            mean_p = self._p_qp_sum / self._p_qp_norm if self._p_qp_norm else self.range.crf
            return self._clip(mean_p - _IP_OFFSET)
        return self._clip(self.motion_qp())

    def encoded(self, *, qp: int, size_bytes: int, keyframe: bool, refinement: bool) -> None:
        """A picture went out: a P picture at a motion quantizer teaches the policy its complexity."""
        if keyframe or refinement:
            return
        complexity = 8 * size_bytes * qscale(qp) / self._macroblocks
        self._complexity_sum = self._complexity_sum * 0.5 + complexity
        self._complexity_count = self._complexity_count * 0.5 + 1
        # x264 decays its mean P quantizer by 0.95 a picture.
        self._p_qp_sum = self._p_qp_sum * 0.95 + qp
        self._p_qp_norm = self._p_qp_norm * 0.95 + 1
