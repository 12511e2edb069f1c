from __future__ import annotations

import pytest

from framestream.core.control import Admission, FrameControl, Grant, ReplayGuard
from framestream.core.tokens import CLOCK_SKEW_S, Claims
from framestream.core.wire import KeyEvent, MouseEvent, TextEvent, TouchEvent, TouchPoint, WheelEvent

NOW = 1_700_000_000.0
HOLD = 5.0  # a person's hold in these tests: an agent's step more than this after their input may take the frame


def grant(jti: str, sub: str = "alice", iat: float = NOW, ttl: float = 120, step: bool = False) -> Claims:
    return Claims(v=1, sbx="s", frm="*", role="drive", sub=sub, iat=iat, exp=iat + ttl, jti=jti, step=step)


# --- ReplayGuard --------------------------------------------------------------------------------------------


def test_step_grant_replay_refused() -> None:
    guard = ReplayGuard()
    step = grant("s1", "agent", ttl=30, step=True)
    assert guard.check_and_mark(step, NOW) is True
    assert guard.check_and_mark(step, NOW + 1) is False
    assert guard.check_and_mark(grant("s2", "agent", ttl=30, step=True), NOW + 1) is True
    assert len(guard) == 2


def test_ordinary_grants_are_reusable_and_not_remembered() -> None:
    guard = ReplayGuard()
    person = grant("p1")
    assert guard.check_and_mark(person, NOW) is True
    assert guard.check_and_mark(person, NOW + 1) is True
    assert len(guard) == 0


def test_replay_guard_forgets_after_expiry_plus_skew() -> None:
    guard = ReplayGuard()
    step = grant("s1", "agent", ttl=30, step=True)
    guard.check_and_mark(step, NOW)
    guard.prune(NOW + 30 + CLOCK_SKEW_S)  # the token still verifies at exactly exp + skew
    assert len(guard) == 1
    guard.prune(NOW + 30 + CLOCK_SKEW_S + 0.001)
    assert len(guard) == 0


def test_replay_guard_is_bounded_and_fails_closed() -> None:
    guard = ReplayGuard(max_entries=2)
    assert guard.check_and_mark(grant("a", ttl=10, step=True), NOW)
    assert guard.check_and_mark(grant("b", ttl=30, step=True), NOW)
    assert guard.check_and_mark(grant("c", ttl=30, step=True), NOW) is False  # full: refuse, never forget
    assert len(guard) == 2
    # Once "a" can no longer verify, its room is reused.
    assert guard.check_and_mark(grant("c", ttl=30, step=True), NOW + 10 + CLOCK_SKEW_S + 1)
    assert len(guard) == 2


# --- arbitration --------------------------------------------------------------------------------------------


def test_first_grant_drives() -> None:
    control = FrameControl()
    assert control.driver is None
    decision = control.admit(grant("p1"), NOW)
    assert decision == Admission(True, None, True, "alice", None, (), grant_changed=True)
    assert control.driver == "alice"
    assert control.grant == Grant("p1", "alice", NOW, NOW + 120, False)
    # The same grant again: nothing changes.
    assert control.admit(grant("p1"), NOW + 1) == Admission(True, None, False, "alice", None, ())


def test_newer_grant_takes_over_and_older_is_superseded() -> None:
    control = FrameControl(hold_s=HOLD)
    control.admit(grant("p1", "alice", iat=NOW), NOW)
    decision = control.admit(grant("a1", "agent", iat=NOW + 10, ttl=30, step=True), NOW + 10)
    assert (decision.accepted, decision.driver_changed, decision.driver, decision.previous_driver) == (
        True,
        True,
        "agent",
        "alice",
    )
    refused = control.admit(grant("p1", "alice", iat=NOW), NOW + 11)
    assert refused == Admission(False, "superseded", False, "agent", None, ())
    assert control.driver == "agent"
    # A newer grant for the person takes the frame back at once.
    back = control.admit(grant("p2", "alice", iat=NOW + 12), NOW + 12)
    assert (back.accepted, back.driver, back.previous_driver) == (True, "alice", "agent")
    # While the person holds, an agent step is refused as taken over; after, an older one is still superseded.
    assert control.admit(grant("a2", "agent", iat=NOW + 11, step=True, ttl=30), NOW + 13).code == "taken-over"
    assert control.admit(grant("a3", "agent", iat=NOW + 11, step=True, ttl=30), NOW + 12 + HOLD).code == "superseded"


def test_equal_iat_later_presenter_wins_without_ping_pong() -> None:
    control = FrameControl()
    first = grant("tab1", "alice", iat=NOW)
    second = grant("tab2", "bob", iat=NOW)
    assert control.admit(first, NOW).accepted
    decision = control.admit(second, NOW + 1)
    assert (decision.accepted, decision.driver, decision.previous_driver) == (True, "bob", "alice")
    # The displaced grant does not win back by presenting again.
    assert control.admit(first, NOW + 2) == Admission(False, "superseded", False, "bob", None, ())
    assert control.admit(second, NOW + 3).accepted


def test_expired_driving_grant_no_longer_counts() -> None:
    control = FrameControl(hold_s=HOLD)
    control.admit(grant("p1", "alice", iat=NOW, ttl=120), NOW)
    control.admit(grant("a1", "agent", iat=NOW + 10, ttl=30, step=True), NOW + 10)
    # Within exp + skew the agent's grant still rules...
    assert control.admit(grant("p1", "alice", iat=NOW), NOW + 40 + CLOCK_SKEW_S).code == "superseded"
    # ...after it, the person's older but valid grant drives again.
    decision = control.admit(grant("p1", "alice", iat=NOW), NOW + 40 + CLOCK_SKEW_S + 0.5)
    assert (decision.accepted, decision.driver_changed, decision.driver, decision.previous_driver) == (
        True,
        True,
        "alice",
        "agent",
    )


def test_admit_needs_a_drive_grant() -> None:
    view = Claims(v=1, sbx="s", frm="*", role="view", sub="u", iat=NOW, exp=NOW + 60, jti="v")
    with pytest.raises(ValueError):
        FrameControl().admit(view, NOW)


# --- held input ---------------------------------------------------------------------------------------------


def test_held_keys_buttons_and_touches_released_on_change() -> None:
    control = FrameControl()
    control.admit(grant("p1", "alice"), NOW)
    control.record(
        [
            KeyEvent("down", "Shift", "ShiftLeft", 8),
            KeyEvent("down", "A", "KeyA", 8),
            KeyEvent("down", "b", "KeyB", 0),
            KeyEvent("up", "b", "KeyB", 0),  # released by its owner: not released again
            MouseEvent("move", 5, 5),
            MouseEvent("down", 10, 20, "right", 2, 1, 0),
            MouseEvent("down", 10, 20, "left", 3, 1, 0),
            MouseEvent("move", 30, 40, "left", 3, 0, 0),
            TouchEvent("start", (TouchPoint(1, 7, 8),)),
            TextEvent("typed"),
        ]
    )
    assert control.holding
    decision = control.admit(grant("b1", "bob", iat=NOW + 1), NOW + 1)  # between people the newest drives
    assert decision.driver_changed
    assert decision.release == (
        KeyEvent("up", "A", "KeyA", 0),  # ordinary keys first
        KeyEvent("up", "Shift", "ShiftLeft", 0),  # modifiers last
        MouseEvent("up", 30, 40, "left", 2, 0, 0),  # at the last pointer position, right still held
        MouseEvent("up", 30, 40, "right", 0, 0, 0),
        TouchEvent("cancel", ()),
    )
    assert not control.holding
    # The next change has nothing left to release.
    assert control.admit(grant("p2", "alice", iat=NOW + 2), NOW + 2).release == ()


def test_released_input_is_not_released_again() -> None:
    control = FrameControl()
    control.admit(grant("p1", "alice"), NOW)
    control.record([MouseEvent("down", 1, 1, "left", 1, 1, 0), MouseEvent("up", 2, 2, "left", 0, 1, 0)])
    control.record([TouchEvent("start", (TouchPoint(1, 1, 1), TouchPoint(2, 2, 2)))])
    control.record([TouchEvent("end", (TouchPoint(1, 1, 1),)), TouchEvent("end", ())])
    control.record([WheelEvent(50, 60, 0, 10)])
    assert not control.holding
    assert control.admit(grant("a1", "agent", iat=NOW + 1), NOW + 1).release == ()


def test_same_subject_keeps_held_input() -> None:
    control = FrameControl()
    control.admit(grant("s1", "agent", step=True, ttl=30), NOW)
    control.record([MouseEvent("down", 100, 100, "left", 1, 1, 0)])
    # The agent's next step grant continues the drag: nothing released, the driver did not change.
    decision = control.admit(grant("s2", "agent", iat=NOW + 1, step=True, ttl=30), NOW + 1)
    assert decision == Admission(True, None, False, "agent", None, (), grant_changed=True)
    assert control.grant is not None and control.grant.jti == "s2"
    control.record([MouseEvent("move", 200, 150, "left", 1, 0, 0)])
    # A person taking over gets the button released where the agent left it.
    taken = control.admit(grant("p1", "alice", iat=NOW + 2), NOW + 2)
    assert taken.release == (MouseEvent("up", 200, 150, "left", 0, 0, 0),)


def test_key_without_code_tracked_by_key() -> None:
    control = FrameControl()
    control.admit(grant("p1", "alice"), NOW)
    control.record([KeyEvent("down", "a", ""), KeyEvent("down", "Enter", "")])
    control.record([KeyEvent("up", "Enter", "")])
    assert control.admit(grant("p2", "bob", iat=NOW + 1), NOW + 1).release == (KeyEvent("up", "a", "", 0),)


def test_reset_forgets_held_input_but_keeps_the_driver() -> None:
    control = FrameControl()
    control.admit(grant("p1", "alice"), NOW)
    control.record(
        [KeyEvent("down", "Control", "ControlLeft", 2), MouseEvent("down", 3, 4, "middle", 4, 1, 0)]
    )
    control.reset()
    assert not control.holding
    assert control.driver == "alice"
    assert control.admit(grant("p2", "bob", iat=NOW + 1), NOW + 1).release == ()


# --- a person holds; handing back -----------------------------------------------------------------------------


def test_a_person_who_takes_over_holds_until_idle_for_the_hold_time() -> None:
    control = FrameControl(hold_s=HOLD)
    control.admit(grant("a1", "agent", iat=NOW, ttl=30, step=True), NOW)
    taken = control.admit(grant("p1", "alice", iat=NOW + 1), NOW + 1)
    assert (taken.accepted, taken.driver, taken.previous_driver) == (True, "alice", "agent")
    assert control.held(NOW + 1) and control.grant is not None and control.grant.kind == "person"
    # Freshly minted agent steps, each newer than the person's grant, are refused while the person holds...
    for i in range(10):
        at = NOW + 2 + i * 0.4
        refused = control.admit(grant(f"a{i + 2}", "agent", iat=at, ttl=30, step=True), at)
        assert refused == Admission(False, "taken-over", False, "alice", None, ())
        control.admit(grant("p1", "alice", iat=NOW + 1), at + 0.1)  # the person types on: the hold goes on
    last_input = NOW + 2 + 9 * 0.4 + 0.1
    assert control.hold_deadline() == pytest.approx(last_input + HOLD)
    assert control.held(last_input + HOLD - 0.01)
    # ...and the first step after the person has been idle for the hold time takes the frame.
    assert not control.held(last_input + HOLD)
    back = control.admit(grant("a20", "agent", iat=last_input + HOLD, ttl=30, step=True), last_input + HOLD)
    assert (back.accepted, back.driver, back.previous_driver) == (True, "agent", "alice")
    assert control.hold_deadline() is None  # an agent never holds


def test_between_people_the_newest_grant_still_drives() -> None:
    control = FrameControl(hold_s=HOLD)
    control.admit(grant("p1", "alice", iat=NOW), NOW)
    assert control.admit(grant("b0", "bob", iat=NOW - 1), NOW + 1).code == "superseded"
    taken = control.admit(grant("b1", "bob", iat=NOW + 1), NOW + 1)
    assert (taken.accepted, taken.driver) == (True, "bob")
    assert control.held(NOW + 1)


def test_a_hold_ends_with_the_persons_grant() -> None:
    control = FrameControl(hold_s=600)
    control.admit(grant("p1", "alice", iat=NOW, ttl=30), NOW)
    assert control.hold_deadline() == NOW + 30 + CLOCK_SKEW_S
    assert control.admit(grant("a1", "agent", iat=NOW + 1, ttl=30, step=True), NOW + 1).code == "taken-over"


def test_the_driver_hands_back_and_the_handed_back_grant_cannot_drive_again() -> None:
    control = FrameControl(hold_s=HOLD)
    control.admit(grant("p1", "alice", iat=NOW), NOW)
    control.record([KeyEvent("down", "a", "KeyA", 0)])
    # Only the driver may hand back.
    assert control.release(grant("b1", "bob", iat=NOW + 1), NOW + 1) == Admission(
        False, "superseded", False, "alice", None, ())
    back = control.release(grant("p1", "alice", iat=NOW), NOW + 2)
    assert (back.accepted, back.driver_changed, back.driver, back.previous_driver) == (True, True, None, "alice")
    assert back.release == (KeyEvent("up", "a", "KeyA", 0),)
    assert control.driver is None and control.since == NOW + 2 and not control.held(NOW + 2)
    # The person's own grant (and any older) no longer drives: a later mouse move does not grab the frame.
    refused = control.admit(grant("p1", "alice", iat=NOW), NOW + 3)
    assert refused == Admission(False, "superseded", False, None, None, ())
    assert control.admit(grant("a0", "agent", iat=NOW - 5, ttl=30, step=True), NOW + 3).code == "superseded"
    # Handing back again with nobody driving changes nothing.
    assert control.release(grant("p1", "alice", iat=NOW), NOW + 3) == Admission(True, None, False, None, None, ())
    # The agent's next freshly minted step drives.
    step = control.admit(grant("a1", "agent", iat=NOW + 4, ttl=30, step=True), NOW + 4)
    assert (step.accepted, step.driver_changed, step.driver, step.previous_driver) == (True, True, "agent", None)
    assert control.grant is not None and control.grant.kind == "agent" and control.since == NOW + 4


def test_the_floor_stays_after_the_next_driver_expires() -> None:
    control = FrameControl(hold_s=HOLD)
    control.admit(grant("p1", "alice", iat=NOW, ttl=3600), NOW)
    control.release(grant("p1", "alice", iat=NOW, ttl=3600), NOW + 1)
    control.admit(grant("a1", "agent", iat=NOW + 2, ttl=30, step=True), NOW + 2)
    later = NOW + 2 + 30 + CLOCK_SKEW_S + 1  # the agent's grant no longer counts
    assert control.admit(grant("p1", "alice", iat=NOW, ttl=3600), later).code == "superseded"
    assert control.admit(grant("p2", "alice", iat=later, ttl=3600), later).accepted  # a newer one drives


def test_hand_back_at_the_edge_needs_no_grant() -> None:
    """The edge hands back for a person who disconnected."""
    control = FrameControl(hold_s=HOLD)
    assert control.hand_back(NOW) == Admission(True, None, False, None, None, ())
    control.admit(grant("p1", "alice", iat=NOW), NOW)
    gone = control.hand_back(NOW + 1)
    assert (gone.driver_changed, gone.driver, gone.previous_driver) == (True, None, "alice")
    assert control.admit(grant("a1", "agent", iat=NOW + 2, ttl=30, step=True), NOW + 2).accepted
