"""PatchRule: which changes go out as patches, pure, with time passed in."""

from __future__ import annotations

import itertools
import math

import pytest

from framestream.core.pacing import Encode, EncodePolicy, PatchRule, Wait


def test_small_changes_are_patches_and_large_or_many_are_not() -> None:
    rule = PatchRule(max_area=10_000, max_rects=2)
    assert rule.allows(0.0, [(0, 0, 50, 50)])
    assert rule.allows(0.0, [(0, 0, 50, 50), (100, 100, 150, 150)])  # 5000 pixels
    assert not rule.allows(0.0, [(0, 0, 101, 100)])
    assert not rule.allows(0.0, [(0, 0, 1, 1)] * 3)
    assert not rule.allows(0.0, [])


def test_large_damage_is_compared_tightly_unless_changes_were_too_large_lately() -> None:
    rule = PatchRule(max_area=10_000, hold=1.0)
    assert rule.compares_tightly(0.0)
    assert not rule.allows(0.0, [(0, 0, 2000, 400)], tight=False)  # whole rows of large damage: may hold less
    assert rule.compares_tightly(0.1), "rows of large damage say nothing of how much changed"
    assert not rule.allows(0.2, [(0, 0, 200, 100)])  # compared pixel by pixel, and still too large (a scroll)
    assert not rule.compares_tightly(0.3) and not rule.compares_tightly(1.1)
    assert rule.compares_tightly(1.2)
    assert rule.note_sent(1.2, 10) and not rule.note_sent(1.3, 1 << 30)  # too costly as images
    assert not rule.compares_tightly(2.2) and rule.compares_tightly(2.3)


def test_costly_patches_send_video_for_a_while() -> None:
    rule = PatchRule(max_bytes=1000, max_rate=2500, hold=1.0)
    assert rule.note_sent(0.0, 900)
    assert not rule.note_sent(0.1, 1001)  # one picture too big
    assert not rule.allows(0.5, [(0, 0, 1, 1)])
    assert rule.allows(1.2, [(0, 0, 1, 1)])
    assert rule.note_sent(1.2, 900)
    assert rule.note_sent(1.3, 900)
    assert not rule.note_sent(1.4, 900)  # 2700 bytes within a second: a region that keeps changing
    assert not rule.allows(2.3, [(0, 0, 1, 1)])
    assert rule.allows(2.5, [(0, 0, 1, 1)])
    assert rule.note_sent(2.5, 900)  # the window has moved on


def test_a_scroll_s_rest_may_be_a_quarter_of_the_picture_and_its_images_larger() -> None:
    rule = PatchRule(max_area=10_000, max_rects=3, max_bytes=1000, max_scroll_bytes=4000, max_scroll_rate=6000,
                     hold=1.0)
    assert rule.allows_scroll(0.0, [], 100 * 100), "a copy alone"
    assert rule.allows_scroll(0.0, [(0, 0, 100, 100)], 100 * 100), "the change's own limit on a small picture"
    assert rule.allows_scroll(0.0, [(0, 0, 1000, 100)], 1000 * 400), "a quarter of the picture"
    assert not rule.allows_scroll(0.0, [(0, 0, 1000, 101)], 1000 * 400)
    assert not rule.allows_scroll(0.0, [(0, 0, 1, 1)] * 3, 1000 * 400), "the copy is one of the message's rects"
    assert not rule.compares_tightly(0.5), "a scroll's damage is compared by rows for a while"
    assert rule.note_sent(0.0, 3000, scroll=True) and not rule.note_sent(0.1, 3000)  # a change's limit is lower
    assert not rule.allows_scroll(0.5, [], 100 * 100), "held as video after images too costly"
    assert rule.note_sent(1.2, 3900, scroll=True) and not rule.note_sent(1.3, 4001, scroll=True)
    rule = PatchRule(max_scroll_bytes=4000, max_scroll_rate=6000)
    assert rule.note_sent(0.0, 3000, scroll=True) and rule.note_sent(0.1, 3000, scroll=True)
    assert not rule.note_sent(0.2, 1, scroll=True), "past the scroll's rate within a second"


def test_a_patched_change_asks_for_no_refinement() -> None:
    policy = EncodePolicy(fps=30, refine_after=0.1)
    first = policy.decide(0.0)
    assert isinstance(first, Encode)
    policy.note_encoded(0.0, first, changed=True)
    # Still long enough: the two sharpening pictures owed to the first picture.
    refine = policy.decide(0.5)
    assert isinstance(refine, Encode) and refine.refinement
    policy.note_encoded(0.5, refine, changed=False)
    second = policy.decide(0.6)
    assert isinstance(second, Encode) and second.refinement
    policy.note_encoded(0.6, second, changed=False)
    policy.note_damage()
    change = policy.decide(1.0)
    assert isinstance(change, Encode) and not change.refinement
    policy.note_encoded(1.0, change, changed=True, patched=True)
    still = policy.decide(2.0)
    assert isinstance(still, Wait) and still.seconds == math.inf


def _frames(rule: PatchRule, start: float, count: int, box: tuple[int, int, int, int]) -> list[bool]:
    """Offer `count` changes of `box` at 30 fps from `start`; True for each that waits. Sent ones are noted."""
    out = []
    for k in range(count):
        now = start + k / 30
        waits = rule.waits(now, [box])
        if not waits:
            rule.note_patch(now)
        out.append(waits)
    return out


def test_a_running_animation_goes_at_its_own_rate_after_a_while() -> None:
    rule = PatchRule(animation_fps=15, animation_after=1.0)
    spinner = (40, 40, 104, 104)
    first = _frames(rule, 0.0, 30, spinner)  # the first second: every picture
    assert not any(first)
    later = _frames(rule, 1.0, 30, (41, 40, 104, 105))  # then every other one (boxes move a little)
    assert later.count(False) == 15 and all(a != b for a, b in itertools.pairwise(later))


def _crossing(rule: PatchRule, step: int, pictures: int = 90) -> list[bool]:
    """A 400 px box moving `step` pixels a picture at 30 fps (its two edges change) under a counter: for each
    picture whether it waits. Sent ones are noted; its damage (their bounding box) must be grabbed at once."""
    waited = []
    for k in range(pictures):
        now, x = k / 30, 40 + step * k
        edges = [(x, 480, x + step + 24, 880), (x + 400, 480, x + 400 + step + 24, 880), (80, 40, 130, 77)]
        waits = rule.waits(now, edges)
        waited.append(waits)
        if not waits:
            rule.note_patch(now)
    return waited


def test_content_moving_fast_goes_at_the_picture_rate_and_slow_at_the_animation_rate() -> None:
    """Issue 29: a box crossing the page at 36 pixels a picture, held to 15 a second, jumps 72 pixels a picture,
    and its H.264 pictures cost about as many bytes as its patches: at the picture rate. A slower one (10 pixels a
    picture) and a spinner still go at the animation's rate."""
    fast = PatchRule(animation_fps=15, animation_after=1.0)
    assert not any(_crossing(fast, 36))
    assert fast.grab_after(3.0, [(80, 40, 3700, 880)]) == 0.0, "its damage is grabbed at once"
    turning = [(3280, 480, 3300, 880), (80, 40, 130, 77)]  # it turns back: one edge, moved little
    after = []
    for k in range(27):
        now = 3.0 + k / 30
        after.append(fast.waits(now, turning))
        if not after[-1]:
            fast.note_patch(now)
    assert not any(after[:12]), "still fast while it turns (0.4 s)"
    assert any(after[18:]), "at the animation's rate once it moves slowly for longer"
    slow = PatchRule(animation_fps=15, animation_after=1.0)
    waited = _crossing(slow, 10)
    assert not any(waited[:30]) and waited[30:].count(True) >= 25, waited
    spinner = PatchRule(animation_fps=15, animation_after=1.0)
    assert _frames(spinner, 0.0, 60, (40, 40, 168, 168)).count(True) >= 14
    # Judged in CSS pixels: 20 of the picture's pixels a picture is fast at dpr 1, slow at dpr 2.
    assert not any(_crossing(PatchRule(animation_fps=15, animation_after=1.0, dpr=1), 20))
    assert any(_crossing(PatchRule(animation_fps=15, animation_after=1.0, dpr=2), 20))


def test_a_change_elsewhere_or_after_a_pause_goes_at_once() -> None:
    rule = PatchRule(animation_fps=15, animation_after=1.0)
    _frames(rule, 0.0, 40, (40, 40, 104, 104))
    now = 40 / 30
    rule.note_patch(now - 1 / 30)
    assert not rule.waits(now, [(40, 40, 104, 104), (600, 300, 620, 340)])  # a letter typed beside the spinner
    assert not rule.waits(now + 0.5, [(40, 40, 104, 104)])  # the run ended: a new change starts a new one
    off = PatchRule(animation_fps=None)
    assert not any(_frames(off, 0.0, 90, (40, 40, 104, 104)))


def test_a_running_animation_s_damage_is_grabbed_at_its_slot_and_other_damage_at_once() -> None:
    rule = PatchRule(animation_fps=15, animation_after=1.0)
    spinner = (40, 40, 104, 104)
    _frames(rule, 0.0, 40, spinner)  # 1.3 s at 30 fps: running, and its pictures go every other slot
    now = 40 / 30
    last_patch = now - 1 / 30
    rule.note_patch(last_patch)
    slot = last_patch + 1 / 15 - 0.015
    assert rule.grab_after(now, [spinner]) == pytest.approx(slot + 1 / 15 - now), "the next damage, or at the latest"
    assert rule.grab_after(slot, [spinner]) == 0.0, "its slot: grab now"
    assert rule.grab_after(now, [spinner, (600, 300, 620, 340)]) == 0.0, "a letter typed beside it: at once"
    assert rule.grab_after(now + 0.5, [spinner]) == 0.0, "the run ended: a new change goes at once"
    young = PatchRule(animation_fps=15, animation_after=1.0)
    _frames(young, 0.0, 10, spinner)
    assert young.grab_after(10 / 30, [spinner]) == 0.0, "the first second of a run goes at the picture rate"
    assert PatchRule(animation_fps=None).grab_after(0.0, [spinner]) == 0.0
