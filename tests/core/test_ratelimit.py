from framestream.core.ratelimit import TokenBucket


def test_bucket_allows_bursts_then_the_rate() -> None:
    bucket = TokenBucket(rate=10, burst=5)
    assert all(bucket.take(0.0) for _ in range(5))
    assert not bucket.take(0.0)
    assert not bucket.take(0.05)  # half a token back
    assert bucket.take(0.1)
    assert not bucket.take(0.1, amount=6)  # never more than the burst
    assert bucket.take(10.0, amount=5)
