"""The quantizer policy (CRF's choice from pictures already sent), as a pure function of what was encoded."""

from __future__ import annotations

import pytest

from framestream.core.quantizer import QuantizerPolicy, QuantizerRange, qscale

MBS = 160 * 100  # 2560x1600


def policy() -> QuantizerPolicy:
    return QuantizerPolicy(QuantizerRange(crf=27, refine_qp=12, lowest=8, highest=46), MBS)


# Sizes of P pictures at the QP x264's CRF 27 chose for them (2560x1600, docs/performance.md "Constant QP").
VIDEO = (27_747, 26)  # a 1280x720 video
TEXT = (1_857, 18)  # a text page scrolling 6 px a picture
TINY = (40, 18)  # a caret


def settle(p: QuantizerPolicy, sample: tuple[int, int], pictures: int = 12) -> int:
    """Feed pictures whose size follows R = X / Q through `sample`, return the policy's next QP."""
    size, at_qp = sample
    for _ in range(pictures):
        qp = p.next(keyframe=False, refinement=False)
        p.encoded(qp=qp, size_bytes=round(size * qscale(at_qp) / qscale(qp)), keyframe=False, refinement=False)
    return p.next(keyframe=False, refinement=False)


def test_the_first_picture_uses_the_crf_and_keyframes_sit_below_the_motion_quantizer() -> None:
    p = policy()
    assert p.next(keyframe=False, refinement=False) == 27
    assert p.next(keyframe=True, refinement=False) == 24  # x264's ip_factor 1.4: 2.9 QP below
    settle(p, VIDEO)
    motion = p.next(keyframe=False, refinement=False)
    assert p.next(keyframe=True, refinement=False) < motion


def test_complex_pictures_get_a_coarser_quantizer_than_simple_ones() -> None:
    assert settle(policy(), VIDEO) == 26  # as x264's CRF chose
    assert settle(policy(), TEXT) == 18
    assert settle(policy(), TINY) == 18  # CRF's floor: never below crf - 9 for motion


def test_a_change_in_content_reaches_the_quantizer_within_a_few_pictures() -> None:
    p = policy()
    settle(p, TEXT)
    assert settle(p, VIDEO, pictures=3) >= 24
    # Like x264's, the blur is a mean of complexities halved a picture: a big one fades in about 10 pictures.
    assert settle(p, TEXT, pictures=10) <= 19


def test_refinements_and_keyframes_do_not_teach_complexity() -> None:
    p = policy()
    settle(p, TEXT)
    before = p.next(keyframe=False, refinement=False)
    p.encoded(qp=12, size_bytes=500_000, keyframe=False, refinement=True)
    p.encoded(qp=15, size_bytes=900_000, keyframe=True, refinement=False)
    assert p.next(keyframe=False, refinement=False) == before
    assert p.next(keyframe=False, refinement=True) == 12


def test_quantizers_stay_in_range() -> None:
    p = QuantizerPolicy(QuantizerRange(crf=27, refine_qp=2, lowest=8, highest=30), MBS)
    assert p.next(keyframe=False, refinement=True) == 8
    assert settle(p, (10_000_000, 30)) == 30


@pytest.mark.parametrize("qp", [0, 12, 27, 51])
def test_qscale_doubles_every_six(qp: int) -> None:
    assert qscale(qp + 6) == pytest.approx(2 * qscale(qp))
