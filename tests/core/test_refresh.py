"""The display's refresh rate as a function of input times (core/refresh.py)."""

from __future__ import annotations

import pytest

from framestream.core.refresh import RefreshPolicy


def test_the_stream_rate_until_input_then_the_faster_one_for_the_hold() -> None:
    policy = RefreshPolicy(idle_hz=30, input_hz=60, hold_s=2.0)
    assert policy.wanted(100.0) == 30 and policy.next_change(100.0) is None
    policy.note_input(100.0)
    assert policy.wanted(100.0) == 60 and policy.next_change(100.0) == 2.0
    assert policy.wanted(101.9) == 60 and policy.next_change(101.5) == pytest.approx(0.5)
    policy.note_input(101.5)  # each input starts the hold again
    assert policy.wanted(103.4) == 60
    assert policy.wanted(103.5) == 30 and policy.next_change(103.5) is None


def test_an_older_input_does_not_shorten_the_hold() -> None:
    policy = RefreshPolicy(idle_hz=30, input_hz=60, hold_s=2.0)
    policy.note_input(10.0)
    policy.note_input(9.0)
    assert policy.wanted(11.5) == 60


@pytest.mark.parametrize("input_hz", [0, 30, 24])
def test_no_faster_rate_means_no_switch(input_hz: int) -> None:
    policy = RefreshPolicy(idle_hz=30, input_hz=input_hz)
    policy.note_input(5.0)
    assert not policy.switches
    assert policy.wanted(5.0) == 30 and policy.next_change(5.0) is None
