"""DisplayCapture against a real Xvfb (which `make test` installs: these tests fail, never skip, without it)."""

from __future__ import annotations

import ctypes
import os
import select
import shutil
import threading
import time
from collections.abc import Callable, Iterator

import numpy as np
import pytest

from framestream.browser.xvfb import XvfbServer
from framestream.core.errors import CaptureError
from framestream.media.capture import DisplayCapture
from framestream.media.diff import changed_rows
from framestream.media.rects import DamageRect
from tests.support import open_sockets

XVFB = shutil.which("Xvfb")

W, H = 640, 400


# --- fixtures -------------------------------------------------------------------------------------------


@pytest.fixture
def xvfb_factory() -> Iterator[Callable[..., XvfbServer]]:
    """Starts plain Xvfb servers of exactly the asked size (see browser/xvfb.py), killed after the test."""
    if XVFB is None:
        # Never silently (see tests/conftest.py): a skipped capture test would hide a broken capture.
        pytest.fail("the capture tests need Xvfb: run `make test`, which installs it", pytrace=False)
    started: list[XvfbServer] = []

    def start(width: int = W, height: int = H, *extra: str) -> XvfbServer:
        server = XvfbServer.start(width, height, *extra, xvfb_path=XVFB)
        started.append(server)
        return server

    try:
        yield start
    finally:
        for server in started:
            server.kill()


@pytest.fixture
def xvfb(xvfb_factory: Callable[..., XvfbServer]) -> XvfbServer:
    return xvfb_factory()


@pytest.fixture
def cap(xvfb: XvfbServer) -> Iterator[DisplayCapture]:
    with DisplayCapture(xvfb.name, W, H) as c:
        c.wait_damage(1.0)  # the initial whole-screen damage
        yield c


class Painter:
    """A second, plain Xlib client that fills rectangles on the root window."""

    def __init__(self, display: str) -> None:
        x = ctypes.CDLL("libX11.so.6")
        vp, i, u, ul = ctypes.c_void_p, ctypes.c_int, ctypes.c_uint, ctypes.c_ulong
        x.XOpenDisplay.restype, x.XOpenDisplay.argtypes = vp, [ctypes.c_char_p]
        x.XDefaultScreen.restype, x.XDefaultScreen.argtypes = i, [vp]
        x.XRootWindow.restype, x.XRootWindow.argtypes = ul, [vp, i]
        x.XDefaultGC.restype, x.XDefaultGC.argtypes = vp, [vp, i]
        x.XSetForeground.argtypes = [vp, vp, ul]
        x.XFillRectangle.argtypes = [vp, ul, vp, i, i, u, u]
        x.XSync.argtypes = [vp, i]
        x.XCloseDisplay.argtypes = [vp]
        x.XCreateSimpleWindow.restype = ul
        x.XCreateSimpleWindow.argtypes = [vp, ul, i, i, u, u, u, ul, ul]
        x.XMapWindow.argtypes = [vp, ul]
        self._x = x
        self._dpy = x.XOpenDisplay(display.encode())
        assert self._dpy, f"painter cannot open {display}"
        screen = x.XDefaultScreen(self._dpy)
        self._root = x.XRootWindow(self._dpy, screen)
        self._gc = x.XDefaultGC(self._dpy, screen)

    def fill(self, x: int, y: int, w: int, h: int, rgb: int, *, window: int | None = None) -> None:
        self._x.XSetForeground(self._dpy, self._gc, rgb)
        self._x.XFillRectangle(self._dpy, window or self._root, self._gc, x, y, w, h)
        self._x.XSync(self._dpy, 0)

    def child_window(self, x: int, y: int, w: int, h: int) -> int:
        """A mapped child of the root, like a browser's top-level window (no window manager here)."""
        window = int(self._x.XCreateSimpleWindow(self._dpy, self._root, x, y, w, h, 0, 0, 0))
        self._x.XMapWindow(self._dpy, window)
        self._x.XSync(self._dpy, 0)
        return window

    def close(self) -> None:
        self._x.XCloseDisplay(self._dpy)


@pytest.fixture
def painter(xvfb: XvfbServer) -> Iterator[Painter]:
    p = Painter(xvfb.name)
    yield p
    p.close()


def our_segments() -> list[str]:
    """SysV shm segments created by this process (the key is IPC_PRIVATE, so match on cpid)."""
    with open("/proc/sysvipc/shm") as f:
        rows = [line.split() for line in f.readlines()[1:]]
    return [" ".join(r) for r in rows if int(r[4]) == os.getpid()]


def covers(rects: list[DamageRect], x: int, y: int, w: int, h: int) -> bool:
    mask = np.zeros((H, W), bool)
    for r in rects:
        mask[r.y : r.y + r.height, r.x : r.x + r.width] = True
    return bool(mask[y : y + h, x : x + w].all())


# --- capture against Xvfb --------------------------------------------------------------------------------


def test_grab_reads_known_colour_in_bgrx(cap: DisplayCapture, painter: Painter) -> None:
    painter.fill(0, 0, W, H, 0x000000)
    painter.fill(100, 50, 30, 20, 0x112233)  # R=0x11 G=0x22 B=0x33
    pic = cap.grab()
    assert pic.shape == (H, W, 4) and pic.dtype == np.uint8
    assert pic[50, 100, :3].tolist() == [0x33, 0x22, 0x11]
    assert pic[69, 129, :3].tolist() == [0x33, 0x22, 0x11]
    assert pic[70, 130, :3].tolist() == [0, 0, 0]
    assert pic[49, 100, :3].tolist() == [0, 0, 0]
    # grab() is a view of shared memory, two segments taking turns: the next grab leaves it as it was (the
    # worker compares the two), the one after overwrites it; grab_copy() is the caller's own.
    kept = pic.copy()
    painter.fill(100, 50, 30, 20, 0xFFFFFF)
    again = cap.grab()
    assert not np.shares_memory(again, pic)
    assert pic[50, 100, :3].tolist() == [0x33, 0x22, 0x11] and again[50, 100, :3].tolist() == [0xFF, 0xFF, 0xFF]
    painter.fill(100, 50, 30, 20, 0x000000)
    third = cap.grab()
    assert np.shares_memory(third, pic) and pic[50, 100, :3].tolist() == [0, 0, 0]
    assert kept[50, 100, :3].tolist() == [0x33, 0x22, 0x11]


def test_grab_with_damage_reads_only_damaged_rows(cap: DisplayCapture, painter: Painter) -> None:
    painter.fill(0, 0, W, H, 0x000000)
    cap.wait_damage(2.0)
    cap.grab()
    for _ in range(2):  # after a full grab the other segment catches up with everything, then with row 0 only
        cap.grab([DamageRect(0, 0, W, 1)])
    painter.fill(10, 20, 5, 5, 0x0000FF)
    painter.fill(300, 300, 5, 5, 0x00FF00)
    rects = cap.wait_damage(2.0)
    pic = cap.grab([r for r in rects if r.y < 100])  # deliberately leave out the lower square
    assert pic[20, 10, :3].tolist() == [0xFF, 0, 0]
    assert pic[300, 300, :3].tolist() == [0, 0, 0]  # not re-read: the band grab is partial, in place
    pic = cap.grab(rects)
    assert pic[300, 300, :3].tolist() == [0, 0xFF, 0]
    assert pic[20, 10, :3].tolist() == [0xFF, 0, 0]  # the other segment caught up with the last grab's bands
    kept = pic.copy()
    assert np.array_equal(kept, cap.grab_copy())  # band grabs with all the damage == a full grab
    for colour in (0x123456, 0x654321, 0x0F0F0F):  # each segment in turn, several bands each time
        painter.fill(0, 399, W, 1, colour)  # last row, and a band in the middle
        painter.fill(0, 0, 1, 1, colour ^ 0xFFFFFF)  # first row: more than one band
        rects = cap.wait_damage(2.0)
        pic = cap.grab(rects)
        assert pic[399, 5, :3].tolist() == [colour & 0xFF, (colour >> 8) & 0xFF, colour >> 16]
        kept = pic.copy()
        assert np.array_equal(kept, cap.grab_copy())
    assert cap.grab([]) is cap.grab([])  # nothing damaged: nothing read, the last grab's view


def test_first_call_reports_whole_screen(xvfb: XvfbServer) -> None:
    with DisplayCapture(xvfb.name, W, H) as c:
        assert covers(c.wait_damage(1.0), 0, 0, W, H)


def test_still_display_times_out_with_nothing(cap: DisplayCapture) -> None:
    t0 = time.monotonic()
    assert cap.wait_damage(0.3) == []
    assert time.monotonic() - t0 >= 0.28  # it waited its timeout out (how much longer is the machine's business)
    assert cap.pending_damage() == []


def test_damage_reports_drawn_rectangle(cap: DisplayCapture, painter: Painter) -> None:
    painter.fill(200, 100, 50, 40, 0x00FF00)
    rects = cap.wait_damage(2.0)
    assert rects and covers(rects, 200, 100, 50, 40)
    assert all(r.width > 0 and r.height > 0 for r in rects)
    assert cap.pending_damage() == []  # subtracted: reported once
    painter.fill(10, 10, 5, 5, 0x0000FF)
    painter.fill(600, 380, 20, 10, 0x0000FF)
    rects = cap.wait_damage(10.0)  # both fills synced: the region fetched at the first event holds both
    assert covers(rects, 10, 10, 5, 5) and covers(rects, 600, 380, 20, 10)
    assert not covers(rects, 300, 200, 1, 1)  # disjoint rectangles, not one bounding box


def test_damage_on_root_sees_drawing_in_child_windows(cap: DisplayCapture, painter: Painter) -> None:
    window = painter.child_window(100, 100, 200, 150)
    cap.wait_damage(2.0)  # mapping exposes the window
    painter.fill(10, 20, 30, 40, 0xFF00FF, window=window)  # window coordinates
    rects = cap.wait_damage(2.0)
    assert covers(rects, 110, 120, 30, 40)
    assert cap.grab()[120, 110, :3].tolist() == [0xFF, 0, 0xFF]


def test_wait_wakes_on_damage_from_another_thread(cap: DisplayCapture, xvfb: XvfbServer) -> None:
    def paint_later() -> None:
        time.sleep(0.2)
        p = Painter(xvfb.name)
        p.fill(1, 2, 3, 4, 0xABCDEF)
        p.close()

    t = threading.Thread(target=paint_later)
    t.start()
    rects = cap.wait_damage(3600.0)  # not woken by the paint, it would outlast the test's timeout
    t.join()
    assert covers(rects, 1, 2, 3, 4)


def test_damage_now_counts_drawing_before_its_event_is_read(cap: DisplayCapture, painter: Painter) -> None:
    cap.wait_damage(1.0)  # the whole screen, reported first
    assert cap.damage_now() == []
    painter.fill(30, 40, 50, 60, 0x00FF00)  # XSync'ed by the painter: done by the server, its event unread by us
    assert covers(cap.damage_now(), 30, 40, 50, 60)
    assert cap.damage_now() == [] and cap.pending_damage() == []  # taken, and not reported again


def test_dropped_buffers_are_given_back_and_the_next_grab_reads_every_row(cap: DisplayCapture,
                                                                          painter: Painter) -> None:
    painter.fill(0, 0, W, H, 0x102030)
    cap.wait_damage(2.0)
    old = cap.grab(None)
    assert len(our_segments()) == 2
    cap.drop_buffers()
    cap.drop_buffers()  # (twice: nothing more to give back)
    assert old[10, 10, :3].tolist() == [0x30, 0x20, 0x10], "a view handed out stays readable"
    del old
    assert our_segments() == []
    painter.fill(0, 0, 10, 10, 0xFFFFFF)
    small = cap.damage_now()
    assert covers(small, 0, 0, 10, 10)
    pic = cap.grab(small)  # only a corner damaged, yet every row is read into the new segments
    assert cap.read_bands is None and len(our_segments()) == 2
    assert pic[5, 5, :3].tolist() == [255, 255, 255] and pic[H - 1, W - 1, :3].tolist() == [0x30, 0x20, 0x10]
    assert np.array_equal(pic, cap.grab_copy())


def test_fileno_is_selectable_after_pending_damage(cap: DisplayCapture, painter: Painter) -> None:
    assert cap.pending_damage() == []
    painter.fill(5, 5, 10, 10, 0xFF0000)
    ready, _, _ = select.select([cap.fileno()], [], [], 2.0)
    assert ready
    assert covers(cap.pending_damage(), 5, 5, 10, 10)


def test_changed_rows_with_real_damage(cap: DisplayCapture, painter: Painter) -> None:
    kept = cap.grab_copy()
    painter.fill(0, 0, W, H, 0x202020)
    rects = cap.wait_damage(2.0)
    pic = cap.grab()
    assert changed_rows(kept, pic, rects) == (0, H)
    kept = pic.copy()
    painter.fill(0, 0, W, H, 0x202020)  # identical repaint: damage, but nothing changed
    rects = cap.wait_damage(2.0)
    assert rects
    assert changed_rows(kept, cap.grab(), rects) is None
    painter.fill(33, 77, 8, 9, 0x202021)
    rects = cap.wait_damage(2.0)
    assert changed_rows(kept, cap.grab(), rects) == (77, 86)


def test_two_displays_in_two_threads(xvfb_factory: Callable[..., XvfbServer]) -> None:
    servers = [xvfb_factory(), xvfb_factory(320, 200)]
    sizes = [(W, H), (320, 200)]
    results: dict[int, object] = {}

    def work(k: int) -> None:
        try:
            with DisplayCapture(servers[k].name, *sizes[k]) as c:
                c.wait_damage(1.0)
                p = Painter(servers[k].name)
                p.fill(k, k, 7, 7, 0x010203 * (k + 1))
                p.close()
                rects = c.wait_damage(2.0)
                pic = c.grab()
                results[k] = (rects, pic[k, k, :3].tolist())
        except Exception as e:  # reported below
            results[k] = e

    threads = [threading.Thread(target=work, args=(k,)) for k in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(20)
    assert results[0] == ([DamageRect(0, 0, 7, 7)], [3, 2, 1])
    assert results[1] == ([DamageRect(1, 1, 7, 7)], [6, 4, 2])


@pytest.mark.parametrize("first", ["wait_damage", "grab", "pending_damage", "close"])
def test_killed_xvfb_raises_capture_error_and_process_survives(xvfb: XvfbServer, first: str) -> None:
    sockets = open_sockets()
    c = DisplayCapture(xvfb.name, W, H)
    c.wait_damage(1.0)
    pic = c.grab()
    xvfb.kill()
    # Whichever call meets the dead connection first, Xlib's I/O error must become CaptureError, not exit().
    if first == "close":
        c.close()
    else:
        calls: dict[str, Callable[[], object]] = {
            "wait_damage": lambda: c.wait_damage(2.0),
            "grab": c.grab,
            "pending_damage": c.pending_damage,
        }
        with pytest.raises(CaptureError, match="lost the connection"):
            calls[first]()
    for call in (c.grab, c.pending_damage, c.fileno, lambda: c.wait_damage(0.1)):
        with pytest.raises(CaptureError):
            call()
    c.close()
    c.close()
    assert pic[0, 0].shape == (4,)  # the view outlived the server and the capture, still readable
    del pic
    assert our_segments() == []
    assert open_sockets() == sockets  # the dead connection's socket was closed too


def test_xvfb_dying_during_wait(xvfb: XvfbServer) -> None:
    with DisplayCapture(xvfb.name, W, H) as c:
        c.wait_damage(1.0)
        killer = threading.Timer(0.2, xvfb.kill)
        killer.start()
        with pytest.raises(CaptureError):
            c.wait_damage(3600.0)  # not woken by the death, it would outlast the test's timeout (and not raise)
        killer.join()
    assert our_segments() == []


def test_close_is_idempotent_and_frees_shm(xvfb: XvfbServer) -> None:
    before = our_segments()
    assert before == []
    c = DisplayCapture(xvfb.name, W, H)
    segments = our_segments()
    assert len(segments) == 2  # two segments take turns
    # IPC_RMID right after attach: mode carries SHM_DEST (0o1000), so the kernel frees it on last detach.
    assert all(int(segment.split()[2]) & 0o1000 for segment in segments)
    c.close()
    c.close()
    assert our_segments() == []
    with pytest.raises(CaptureError, match="closed"):
        c.grab()
    with pytest.raises(CaptureError, match="closed"):
        c.wait_damage(0)


def test_view_held_past_close_keeps_memory_until_dropped(cap: DisplayCapture, painter: Painter) -> None:
    painter.fill(0, 0, 4, 4, 0x445566)
    view = cap.grab()[0:4, 0:4]
    cap.close()
    assert len(our_segments()) == 1  # still mapped for the view (the other segment is gone): reading it must not crash
    assert view[0, 0, :3].tolist() == [0x66, 0x55, 0x44]
    del view
    assert our_segments() == []


def test_wrong_size_is_a_clear_error(xvfb: XvfbServer) -> None:
    with pytest.raises(CaptureError, match=r"is 640x400, smaller than 800x600"):
        DisplayCapture(xvfb.name, 800, 600)
    assert our_segments() == []


def test_a_larger_screen_is_captured_from_its_top_left(xvfb: XvfbServer) -> None:
    # The service makes each screen one pixel larger than the picture (Chromium's window is one pixel short).
    with DisplayCapture(xvfb.name, 638, 398) as cap:
        assert cap.grab().shape == (398, 638, 4)
        assert all(r.x + r.width <= 638 and r.y + r.height <= 398 for r in cap.pending_damage())


def test_unreachable_display_is_a_clear_error() -> None:
    with pytest.raises(CaptureError, match="cannot open X display"):
        DisplayCapture(":4095", W, H)


def test_missing_damage_extension_is_a_clear_error(xvfb_factory: Callable[..., XvfbServer]) -> None:
    server = xvfb_factory(W, H, "-extension", "DAMAGE")
    with pytest.raises(CaptureError, match="DAMAGE"):
        DisplayCapture(server.name, W, H)
    assert our_segments() == []
