"""The C loops (media/_blocks.c, core/_slices.c) release the GIL while they work: a frame's worker thread runs them
on every picture of moving content, and the event loop (every viewer's socket) and the other frames' workers must
go on meanwhile.

A thread tells this one it is about to make a long call (a large picture) and makes it; this thread, woken by that,
notes when it ran. With the switch interval set long, a thread that holds the GIL keeps it until it blocks: so this
thread runs before the call returns only if the call let go of the GIL. No time is waited for, and how long the
call takes does not matter beyond being longer than a thread's wake-up."""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable

import numpy as np
import pytest

from framestream.core._slices import p_slice_rbsp
from framestream.media._blocks import carried_lossy, changed_squares, equal_blocks


def ran_during(call: Callable[[], object]) -> bool:
    """Whether this thread ran while another thread was inside `call`."""
    entered = threading.Event()
    returned: list[float] = []

    def run() -> None:
        entered.set()
        call()
        returned.append(time.perf_counter())

    previous = sys.getswitchinterval()
    sys.setswitchinterval(10.0)  # no handing over of the GIL but when a thread blocks or lets go of it
    try:
        worker = threading.Thread(target=run)
        worker.start()
        entered.wait()
        woke = time.perf_counter()
        worker.join()
    finally:
        sys.setswitchinterval(previous)
    return woke < returned[0]


def planes(height: int, width: int) -> list[np.ndarray]:
    rng = np.random.default_rng(1)
    luma = rng.integers(0, 255, (height, width), np.uint8)
    return [luma, luma[::2, ::2].copy(), luma[1::2, 1::2].copy()]


def equal_blocks_call() -> Callable[[], object]:
    now = planes(8192, 8192)
    before = [p.copy() for p in now]  # equal: every block compared whole
    out = np.ones((512, 512), bool)
    return lambda: equal_blocks(*now, *before, 0, 512, 0, 512, 0, 0, out)


def changed_squares_call() -> Callable[[], object]:
    before = np.zeros((8192, 4096, 4), np.uint8)
    now = before.copy()  # unchanged: every square read to its end
    out = np.zeros((2048, 1024), bool)
    return lambda: changed_squares(before, now, 4, out)  # small squares: more work a byte


def carried_lossy_call() -> Callable[[], object]:
    rows, columns = 2048, 2048
    rng = np.random.default_rng(2)
    lossy = rng.random((rows, columns)) < 0.5
    vectors = np.zeros((rows, columns, 2), np.int32)
    vectors[..., 1] = 8  # every block moved down half a block: two sources each
    vectors[:1] = 0
    new = np.zeros((rows, columns), bool)
    out = np.empty_like(lossy)
    return lambda: carried_lossy(lossy, new, vectors, out)


def p_slice_call() -> Callable[[], object]:
    rows, columns = 1024, 2048
    rng = np.random.default_rng(3)
    vectors = (rng.integers(-8, 8, (rows, columns, 2)) * 4).astype(np.int32)  # every block's vector coded
    return lambda: p_slice_rbsp(b"\x80", 1, vectors.data, columns, 0, rows * columns)


@pytest.mark.parametrize("make", [equal_blocks_call, changed_squares_call, carried_lossy_call, p_slice_call],
                         ids=lambda make: make.__name__.removesuffix("_call"))
def test_a_c_call_lets_other_threads_run(make: Callable[[], Callable[[], object]]) -> None:
    assert ran_during(make()), "another thread could not run while the call worked: it held the GIL"
