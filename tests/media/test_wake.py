"""The worker's wake pipe (media/wake.py): a wake from another thread ends a wait; woken twice, one drain empties it."""

from __future__ import annotations

import select
import threading

from framestream.media.wake import WakePipe


def readable(waker: WakePipe) -> bool:
    ready, _, _ = select.select([waker.fileno()], [], [], 0)
    return bool(ready)


def test_a_wake_from_another_thread_ends_the_wait_and_a_drain_takes_every_wake() -> None:
    waker = WakePipe()
    try:
        assert not readable(waker)
        thread = threading.Thread(target=waker.wake)
        thread.start()
        waker.wait()  # returns once woken (and drains)
        thread.join()
        assert not readable(waker)
        waker.wake()
        waker.wake()
        assert readable(waker)
        waker.drain()
        assert not readable(waker)
    finally:
        waker.close()


def test_wakes_after_close_or_past_a_full_pipe_are_quiet() -> None:
    waker = WakePipe()
    for _ in range(100_000):  # past the pipe's 64 KiB: the pipe stays full, nobody blocks
        waker.wake()
    assert readable(waker)
    waker.close()
    waker.wake()
    waker.drain()
    waker.close()
