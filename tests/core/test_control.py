from __future__ import annotations

import pytest

from framestream.core.control import Admission, FrameControl, Grant, ReplayGuard
from framestream.core.tokens import CLOCK_SKEW_S, Claims
from framestream.core.wire import KeyEvent, MouseEvent, TextEvent, TouchEvent, TouchPoint, WheelEvent

NOW = 1_700_000_000.0


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
    control = FrameControl()
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
    assert control.admit(grant("a2", "agent", iat=NOW + 11, step=True, ttl=30), NOW + 13).code == "superseded"


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
    control = FrameControl()
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
    decision = control.admit(grant("a1", "agent", iat=NOW + 1, step=True, ttl=30), NOW + 1)
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
