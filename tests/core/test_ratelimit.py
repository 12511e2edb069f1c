from framestream.core.ratelimit import LatestEvery, MessageLimits, TokenBucket


def test_bucket_allows_bursts_then_the_rate() -> None:
    bucket = TokenBucket(rate=10, burst=5)
    assert all(bucket.take(0.0) for _ in range(5))
    assert not bucket.take(0.0)
    assert not bucket.take(0.05)  # half a token back
    assert bucket.take(0.1)
    assert not bucket.take(0.1, amount=6)  # never more than the burst
    assert bucket.take(10.0, amount=5)


def test_message_limits_per_kind_and_refusals() -> None:
    limits = MessageLimits(message_rate=4.0)  # bursts of 10
    assert all(limits.take(0.0) for _ in range(10)) and not limits.take(0.0)
    assert limits.take(0.25)  # one back
    assert all(limits.take(0.0, "refresh") for _ in range(4)) and not limits.take(0.0, "refresh")
    assert limits.take(0.0, "input")  # no limit of its own here (input counts events, apart)
    assert all(limits.refused(0.0) for _ in range(100)) and not limits.refused(0.0)


def test_latest_every_sends_the_first_at_once_and_then_only_the_newest_each_interval() -> None:
    states = LatestEvery(0.05)
    assert states.offer("f1", "s1", 10.0) == "s1"
    assert states.next_due() is None
    assert states.offer("f1", "s2", 10.01) is None
    assert states.offer("f2", "t1", 10.01) == "t1"  # another key has its own interval
    assert states.offer("f1", "s3", 10.02) is None
    assert states.next_due() == 10.05
    assert states.due(10.03) == []
    assert states.due(10.05) == [("f1", "s3")]  # s2 never goes: s3 replaced it
    assert states.next_due() is None
    assert states.offer("f1", "s4", 10.06) is None  # 10 ms after the last one went
    assert states.due(10.1) == [("f1", "s4")]
    assert states.offer("f1", "s5", 10.2) == "s5"  # a quiet interval: at once again
    for i in range(1000):  # a flood: one held, whatever comes
        states.offer("f1", f"x{i}", 10.2 + i * 1e-5)
    assert states.due(10.25) == [("f1", "x999")]
    states.offer("f1", "gone", 10.26)
    states.forget("f1")
    assert states.next_due() is None and states.offer("f1", "new", 10.27) == "new"
