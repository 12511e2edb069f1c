"""Micro-benchmarks of framestream.media.capture against a private Xvfb.

    .venv/bin/python benchmarks/capture_micro.py [--still-seconds 5] [--sizes 1280x800,2560x1600]

Prints, per size: XShm grab time (mean of 200), grab_copy time, damage latency, the CPU a thread spends
waiting on damage over a still display, changed_rows timings, and the CPU of a whole capture loop (wait,
grab, change check, copy) while another client paints a 256x256 square at 30 Hz.
"""

from __future__ import annotations

import argparse
import ctypes
import os
import resource
import threading
import time
import timeit
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import numpy as np

from framestream.browser.xvfb import XvfbServer
from framestream.media.capture import DisplayCapture
from framestream.media.diff import changed_rows
from framestream.media.rects import DamageRect


@contextmanager
def xvfb(width: int, height: int) -> Iterator[tuple[str, int]]:
    server = XvfbServer.start(width, height)
    try:
        yield server.name, server.pid
    finally:
        server.kill()


class Painter:
    def __init__(self, display: str) -> None:
        x = ctypes.CDLL("libX11.so.6")
        vp, i, u, ul = ctypes.c_void_p, ctypes.c_int, ctypes.c_uint, ctypes.c_ulong
        x.XOpenDisplay.restype, x.XOpenDisplay.argtypes = vp, [ctypes.c_char_p]
        x.XDefaultScreen.argtypes = [vp]
        x.XRootWindow.restype, x.XRootWindow.argtypes = ul, [vp, i]
        x.XDefaultGC.restype, x.XDefaultGC.argtypes = vp, [vp, i]
        x.XSetForeground.argtypes = [vp, vp, ul]
        x.XFillRectangle.argtypes = [vp, ul, vp, i, i, u, u]
        x.XSync.argtypes = [vp, i]
        x.XCloseDisplay.argtypes = [vp]
        self.x = x
        self.dpy = x.XOpenDisplay(display.encode())
        screen = x.XDefaultScreen(self.dpy)
        self.root = x.XRootWindow(self.dpy, screen)
        self.gc = x.XDefaultGC(self.dpy, screen)

    def fill(self, x: int, y: int, w: int, h: int, rgb: int) -> None:
        self.x.XSetForeground(self.dpy, self.gc, rgb)
        self.x.XFillRectangle(self.dpy, self.root, self.gc, x, y, w, h)
        self.x.XSync(self.dpy, 0)

    def close(self) -> None:
        self.x.XCloseDisplay(self.dpy)


def thread_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_THREAD)
    return r.ru_utime + r.ru_stime


def proc_cpu(pid: int) -> float:
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def ms(seconds: float) -> str:
    return f"{seconds * 1e3:.3f} ms"


def per_call(fn: Callable[[], object], calls: int = 200) -> str:
    """Best and median time per call over `calls` calls in 10 rounds (the best resists a busy machine)."""
    rounds = timeit.repeat(fn, number=calls // 10, repeat=10)
    per = sorted(r / (calls // 10) for r in rounds)
    return f"best {ms(per[0])}, median {ms(per[len(per) // 2])}"


def bench(width: int, height: int, still_seconds: float) -> None:
    print(f"== {width}x{height}")
    with xvfb(width, height) as (display, server_pid), DisplayCapture(display, width, height) as cap:
        painter = Painter(display)
        cap.wait_damage(1.0)

        band = [DamageRect(0, height // 2, width, 256)]
        print(f"grab, full screen (200 grabs):        {per_call(cap.grab)}")
        s0 = proc_cpu(server_pid)
        c0 = thread_cpu()
        timeit.timeit(cap.grab, number=200)
        server, ours = (proc_cpu(server_pid) - s0) / 200, (thread_cpu() - c0) / 200
        print(f"  CPU per full grab: Xvfb {ms(server)}, ours {ms(ours)}")
        print(f"grab(damage), one 256-row band:       {per_call(lambda: cap.grab(band))}")
        print(f"grab_copy (200 grabs):                {per_call(cap.grab_copy)}")
        print(f"pending_damage, nothing pending:      {per_call(cap.pending_damage, 2000)}")

        lat = []
        for k in range(50):
            t0 = time.perf_counter()
            painter.fill(k, k, 64, 64, 0x010101 * k)
            cap.wait_damage(1.0)
            lat.append(time.perf_counter() - t0)
        print(
            f"paint -> wait_damage returns (median of 50): {ms(float(np.median(lat)))} (includes the paint)"
        )

        cap.pending_damage()
        c0, s0, w0 = thread_cpu(), proc_cpu(server_pid), time.monotonic()
        woke = 0
        while time.monotonic() - w0 < still_seconds:
            if cap.wait_damage(1.0):
                woke += 1
        wall = time.monotonic() - w0
        print(
            f"still display, wait_damage(1.0) for {wall:.1f} s: thread CPU {(thread_cpu() - c0) / wall:.5f} "
            f"vCPU, Xvfb CPU {(proc_cpu(server_pid) - s0) / wall:.5f} vCPU, spurious wakes {woke}"
        )

        painter.fill(0, 0, width, height, 0x336699)
        cap.wait_damage(1.0)
        prev = cap.grab_copy()
        cur = prev.copy()
        full = [DamageRect(0, 0, width, height)]
        small = [DamageRect(width // 2, height // 2, 256, 256)]
        print(f"changed_rows identical, whole picture:     {per_call(lambda: changed_rows(prev, cur, None))}")
        print(
            f"changed_rows identical, 256x256 damage:    {per_call(lambda: changed_rows(prev, cur, small))}"
        )
        cur[height // 2, width // 2] ^= 0xFF
        print(f"changed_rows one changed pixel mid-screen: {per_call(lambda: changed_rows(prev, cur, full))}")
        cur[0, 0] ^= 0xFF
        cur[-1, -1] ^= 0xFF
        print(f"changed_rows changed first and last row:   {per_call(lambda: changed_rows(prev, cur, full))}")
        shm = cap.grab()
        print(f"changed_rows identical, shm view vs copy:  {per_call(lambda: changed_rows(prev, shm, full))}")

        # A whole capture loop while another client paints at 30 Hz.
        stop = threading.Event()

        def animate() -> None:
            p = Painter(display)
            k = 0
            while not stop.is_set():
                k += 1
                p.fill(100 + k % 200, 100, 256, 256, 0x000100 * (k % 256))
                time.sleep(1 / 30)
            p.close()

        anim = threading.Thread(target=animate)
        anim.start()
        for partial in (False, True):
            kept = cap.grab_copy()
            cap.pending_damage()
            frames = 0
            c0, s0, w0 = thread_cpu(), proc_cpu(server_pid), time.monotonic()
            while time.monotonic() - w0 < 3.0:
                rects = cap.wait_damage(0.5)
                if not rects:
                    continue
                pic = cap.grab(rects if partial else None)
                rows = changed_rows(kept, pic, rects)
                if rows is not None:
                    kept[rows[0] : rows[1]] = pic[rows[0] : rows[1]]
                    frames += 1
            wall = time.monotonic() - w0
            how = "grab(rects)" if partial else "full grab  "
            ours, server = (thread_cpu() - c0) / wall, (proc_cpu(server_pid) - s0) / wall
            print(
                f"capture loop, {how}, 256x256 square moving at 30 Hz: {frames / wall:.1f} changed/s, "
                f"ours {ours:.4f} vCPU, Xvfb {server:.4f} vCPU"
            )
        stop.set()
        anim.join()
        print("  (Xvfb's CPU above includes executing the painter's fills; no encoding anywhere)")
        painter.close()


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--still-seconds", type=float, default=5.0)
    parser.add_argument("--sizes", default="1280x800,2560x1600")
    args = parser.parse_args()
    print(f"cpus {os.cpu_count()}, numpy {np.__version__}")
    for size in args.sizes.split(","):
        w, h = (int(v) for v in size.split("x"))
        bench(w, h, args.still_seconds)


if __name__ == "__main__":
    main()
