"""Which viewer connections may stay (core/admission.py): welcomed ones counted, waiting ones capped."""

from __future__ import annotations

from framestream.core.admission import Admission, address_group


def test_only_welcomed_connections_count_against_the_cap() -> None:
    rule: Admission[str] = Admission(max_open=2, max_pending=32, max_pending_per_address=8)
    for i in range(8):
        assert rule.arrive(f"silent{i}", "10.0.0.9") == []
    for name in ("a", "b", "c"):
        assert rule.arrive(name, "10.0.0.1") == []
    assert rule.welcome("a") and rule.welcome("b")
    assert not rule.welcome("c")  # the welcomed are full: 8 silent sockets took nothing from them
    assert (rule.open, rule.pending) == (2, 9)
    rule.leave("a")
    assert rule.welcome("c") and rule.open == 2


def test_the_oldest_waiting_connection_of_an_address_makes_room() -> None:
    rule: Admission[int] = Admission(max_open=10, max_pending=32, max_pending_per_address=3)
    assert [rule.arrive(i, "192.0.2.1") for i in range(3)] == [[], [], []]
    assert rule.arrive(3, "192.0.2.1") == [0]
    assert rule.arrive(4, "192.0.2.1") == [1]
    assert rule.arrive(5, "192.0.2.2") == []  # another address has its own room
    assert not rule.welcome(0)  # displaced: its late hello is not welcomed
    assert rule.welcome(4) and rule.pending == 3


def test_the_oldest_waiting_connection_of_all_makes_room_at_the_global_cap() -> None:
    rule: Admission[int] = Admission(max_open=10, max_pending=4, max_pending_per_address=8)
    for i in range(4):
        assert rule.arrive(i, f"198.51.100.{i}") == []
    assert rule.arrive(4, "198.51.100.99") == [0]
    assert rule.welcome(1)  # welcomed: it no longer waits, so it is never displaced
    assert rule.arrive(5, "198.51.100.98") == []
    assert rule.arrive(6, "198.51.100.97") == [2]
    rule.leave(2)  # closing a displaced one changes nothing
    assert (rule.open, rule.pending) == (1, 4)


def test_ipv6_counts_by_its_64_and_mapped_ipv4_as_ipv4() -> None:
    assert address_group("2001:db8:1:2:aaaa::1") == address_group("2001:db8:1:2:bbbb::7") == "2001:db8:1:2::/64"
    assert address_group("2001:db8:1:3::1") != address_group("2001:db8:1:2::1")
    assert address_group("::ffff:192.0.2.7") == "192.0.2.7"
    assert address_group(None) == "" and address_group("not-an-ip") == "not-an-ip"
