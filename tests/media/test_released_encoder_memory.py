"""A frame's encoder gives its memory back when it closes, even while its worker thread lives on (paused).

glibc raises its mmap threshold after the first large free, after which x264's frame buffers (about 6 MB each
at 2560x1600) come from the worker thread's arena and, freed, stay in its top, which `malloc_trim` does not
release in a thread's arena: each released frame kept 12-20 MB. The service fixes the threshold at start
(`map_large_blocks`). Measured in a child process, so this one's allocator is left as it is."""

from __future__ import annotations

import subprocess
import sys
import textwrap

CHILD = textwrap.dedent('''
    import ctypes, sys, threading, time
    import numpy as np
    from framestream.media.encoder import H264Encoder
    from framestream.service.heap import give_back_freed_memory, map_large_blocks

    if sys.argv[1] == "fixed":
        map_large_blocks()

    def pss_mb():
        with open("/proc/self/smaps_rollup") as f:
            return next(int(line.split()[1]) for line in f if line.startswith("Pss:")) / 1024

    picture = np.random.default_rng(1).integers(0, 255, (1600, 2560, 4), dtype=np.uint8)
    hold, done = threading.Event(), []

    def live_stretch():  # what a frame's worker does: encode, close, give back, then wait (paused)
        encoder = H264Encoder(2560, 1600)
        for k in range(12):
            picture[k * 8 : k * 8 + 8] ^= 255
            encoder.update(picture)
            encoder.encode(keyframe=k == 0)
        encoder.close()
        del encoder
        give_back_freed_memory()
        done.append(1)
        hold.wait()

    warm = threading.Thread(target=live_stretch)  # libraries and first allocations, counted before
    warm.start()
    while not done:
        time.sleep(0.01)
    before = pss_mb()
    threads = [threading.Thread(target=live_stretch) for _ in range(3)]
    for thread in threads:
        thread.start()
        while len(done) < 1 + threads.index(thread) + 1:
            time.sleep(0.01)
    print(round(pss_mb() - before, 1))
    hold.set()
''')


def grown_mb(mode: str) -> float:
    out = subprocess.run([sys.executable, "-c", CHILD, mode], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    return float(out.stdout.split()[-1])


def test_three_paused_workers_keep_no_encoder_memory() -> None:
    assert grown_mb("fixed") < 6  # three closed 2560x1600 encoders, their threads still alive


def test_without_a_fixed_threshold_the_arenas_keep_it() -> None:
    """The measurement itself: glibc's default keeps at least a frame buffer a thread (so the test above can
    fail)."""
    assert grown_mb("default") > 12
