"""The encode policy: rate cap, keyframe coalescing, refinement; how large damage is compared. Time is passed in."""

from __future__ import annotations

import math
import random

import pytest

from framestream.core.pacing import (
    PATCH_FLUSH_EVERY_S,
    PATCH_FLUSH_S,
    BlockRule,
    Encode,
    EncodePolicy,
    Wait,
    patch_flush_at,
)


def run(policy: EncodePolicy, now: float, *, changed: bool = True) -> Encode | Wait:
    decision = policy.decide(now)
    if isinstance(decision, Encode):
        policy.note_encoded(now, decision, changed=changed)
    return decision


def test_first_picture_is_a_keyframe_then_nothing_without_damage() -> None:
    policy = EncodePolicy()
    first = run(policy, 0.0)
    assert first == Encode(keyframe=True, refinement=False, grab=True)
    # Refinement of the first picture after it has been still for refine_after.
    assert isinstance(policy.decide(0.05), Wait)
    assert policy.decide(0.2) == Encode(keyframe=False, refinement=True, grab=False)
    policy.note_encoded(0.2, Encode(False, True, False), changed=False)
    assert policy.decide(0.25) == Encode(keyframe=False, refinement=True, grab=False)
    policy.note_encoded(0.25, Encode(False, True, False), changed=False)
    assert policy.decide(10.0) == Wait(math.inf)


def test_damage_is_capped_at_the_frame_rate() -> None:
    policy = EncodePolicy(fps=30)
    run(policy, 0.0)
    policy.note_damage()
    decision = policy.decide(0.01)
    assert isinstance(decision, Wait)
    assert math.isclose(decision.seconds, 1 / 30 - 0.01, rel_tol=1e-6)
    assert policy.decide(1 / 30) == Encode(keyframe=False, refinement=False, grab=True)


def test_nothing_is_encoded_before_the_next_slot_whatever_comes() -> None:
    # The worker reads damage only from `next_slot` on (media/pipeline.py): that is safe only if no damage,
    # keyframe request or refinement makes the policy encode earlier. Random runs of all of them, checked at once.
    rng = random.Random(29)
    for _ in range(200):
        policy, now = EncodePolicy(fps=30), 0.0
        for _ in range(60):
            now += rng.choice((0.0, 0.001, 0.01, 0.02, 1 / 30, 0.2, 1.5))
            event = rng.randrange(4)
            if event == 0:
                policy.note_damage()
            elif event == 1:
                policy.request_keyframe(at_once=rng.random() < 0.5)
            slot = policy.next_slot
            decision = policy.decide(now)
            if isinstance(decision, Encode):
                assert now >= slot, (now, slot, decision)
                policy.note_encoded(now, decision, changed=rng.random() < 0.7, patched=rng.random() < 0.2)
            elif now < slot:
                assert now + decision.seconds >= slot  # its wait ends at the slot at the earliest


def test_unchanged_grab_produces_nothing_and_does_not_use_the_slot() -> None:
    policy = EncodePolicy()
    run(policy, 0.0)
    for t in (1.0, 1.1):  # the refinement of the first picture
        assert run(policy, t, changed=False) == Encode(False, True, False)
    policy.note_damage()
    decision = run(policy, 2.0, changed=False)
    assert decision == Encode(keyframe=False, refinement=False, grab=True)
    assert policy.decide(2.001) == Wait(math.inf)  # no refinement: nothing changed


def test_keyframes_are_coalesced_to_one_a_second() -> None:
    policy = EncodePolicy(keyframe_interval=1.0)
    run(policy, 0.0)
    run(policy, 0.15, changed=False)
    run(policy, 0.2, changed=False)  # the first picture's refinement
    policy.request_keyframe()
    policy.request_keyframe()
    decision = policy.decide(0.3)
    assert isinstance(decision, Wait) and math.isclose(decision.seconds, 0.7)
    key = run(policy, 1.0, changed=False)
    assert isinstance(key, Encode) and key.keyframe
    assert not policy.keyframe_pending


def test_keyframe_of_a_still_picture_is_refined_at_once() -> None:
    policy = EncodePolicy()
    run(policy, 0.0)
    run(policy, 0.5, changed=False)
    run(policy, 0.6, changed=False)
    policy.request_keyframe()
    decision = run(policy, 5.0, changed=False)
    assert decision == Encode(keyframe=True, refinement=True, grab=True)
    assert policy.decide(5.5) == Wait(math.inf)  # no further refinement needed


def test_motion_then_stillness_refines_after_the_delay() -> None:
    policy = EncodePolicy(refine_after=0.12, refine_frames=2)
    run(policy, 0.0)
    for i in range(1, 5):
        policy.note_damage()
        assert run(policy, i / 30) == Encode(False, False, True)
    last = 4 / 30
    decision = policy.decide(last + 0.05)
    assert isinstance(decision, Wait) and math.isclose(decision.seconds, 0.07, abs_tol=1e-9)
    assert policy.decide(last + 0.12) == Encode(False, True, False)


def test_an_at_once_keyframe_of_a_still_page_is_quick_and_then_refined() -> None:
    """A resume's IDR goes out at the next slot at ordinary quality (a viewer waits for it), sharpened after."""
    policy = EncodePolicy(fps=30)
    first = policy.decide(0.0)
    assert isinstance(first, Encode) and first.keyframe
    policy.note_encoded(0.0, first, changed=True)
    for t in (0.2, 0.25):  # the still page is refined
        step = policy.decide(t)
        assert isinstance(step, Encode) and step.refinement
        policy.note_encoded(t, step, changed=False)
    policy.request_keyframe()  # an ordinary request on a still page: one sharp IDR
    assert isinstance(policy.decide(0.3), Wait)  # (within the one-a-second budget)
    sharp = policy.decide(1.1)
    assert isinstance(sharp, Encode) and sharp.keyframe and sharp.refinement
    policy.note_encoded(1.1, sharp, changed=False)
    policy.request_keyframe(at_once=True)  # a resume: at the next slot, not a second later, and quick
    quick = policy.decide(1.15)
    assert isinstance(quick, Encode) and quick.keyframe and not quick.refinement
    policy.note_encoded(1.15, quick, changed=False)
    then = policy.decide(1.2)
    assert isinstance(then, Encode) and then.refinement and not then.keyframe


def test_block_comparison_goes_on_while_it_pays_and_looks_again_one_grab_in_retry() -> None:
    rule = BlockRule(retry=4, share=0.5)
    assert [rule.wanted() for _ in range(3)] == [True, True, True]  # no comparison noted yet
    rule.note(0.1)  # a box under a counter: a tenth of the damage changed
    assert rule.wanted()
    rule.note(0.9)  # a scroll: nearly all of it
    assert [rule.wanted() for _ in range(4)] == [False, False, False, True]
    rule.note(0.95)
    assert [rule.wanted() for _ in range(4)] == [False, False, False, True]
    rule.note(0.2)  # the scroll stopped, the box goes on
    assert [rule.wanted() for _ in range(3)] == [True, True, True]


def flushes(patches: list[float], until: float) -> list[tuple[float, float]]:
    """(first patch waiting, flush) pairs as media/pipeline.py makes them, for patches at these times."""
    made: list[tuple[float, float]] = []
    flushed_at, flush_at, waiting_since = -PATCH_FLUSH_EVERY_S, None, None
    times = sorted(set(patches) | {round(i / 100, 2) for i in range(int(until * 100))})
    for now in times:
        if flush_at is not None and now >= flush_at:
            assert waiting_since is not None
            made.append((waiting_since, now))
            flushed_at, flush_at, waiting_since = now, None, None
        if now in patches and flush_at is None:
            flush_at, waiting_since = patch_flush_at(now, flushed_at), now
    return made


def test_a_step_after_a_quiet_spell_reaches_the_recording_its_delay_after_it() -> None:
    # An agent's steps 0.7 s apart, each changing a little (patches): each flushed 0.4 s after it, before the next.
    steps = [1.0, 1.7, 2.4, 3.1]
    made = flushes(steps, 5.0)
    assert [first for first, _ in made] == steps
    assert all(flush - first == pytest.approx(PATCH_FLUSH_S, abs=0.011) for first, flush in made), made


def test_a_running_animation_sent_as_patches_costs_one_flush_a_second_and_waits_at_most_one() -> None:
    made = flushes([round(i / 15, 4) for i in range(150)], 10.0)  # a spinner's patches, 15 a second for 10 s
    assert 9 <= len(made) <= 11, made
    assert all(flush - first <= 1.0 for first, flush in made), made
