"""Capture of one X display through X shared memory, driven by DAMAGE events, in pure ctypes.

One `DisplayCapture` per live frame, owned by that frame's worker thread (never the event loop). The worker's
loop, with `last` the picture of the grab before::

    rects = cap.pending_damage()              # drains what Xlib buffered; only then is select() reliable
    if not rects:
        select([cap.fileno(), wake_fd], [], [], timeout)   # or simply rects = cap.wait_damage(timeout)
        rects = cap.pending_damage()
    if rects:                                 # the damage is subtracted *before* the grab, so a paint that
        pic = cap.grab(rects)                 # races the grab is reported again next time, and is read now
        rows = changed_rows(last, pic, [every band in cap.read_bands])  # not just `rects`: media/changes.py
        last = pic
        if rows:
            encode(pic)

Two segments take turns, so the grab before stays intact while the next one is read: the worker compares the two
and keeps neither as a copy (a scroll at 2560x1600 changes every row: copying them cost 1.8 ms a picture).

Robustness: an Xvfb that dies turns into `CaptureError` on the next call instead of killing the service
(media/xerrors.py), and the shared memory cannot outlive the process (media/shm.py). The C declarations are in
media/xlib.py.
"""

from __future__ import annotations

import ctypes
import select
import threading
import time
from collections.abc import Sequence
from types import TracebackType

from framestream.core.errors import CaptureError
from framestream.media import xerrors
from framestream.media.rects import DamageRect, clip, row_bands
from framestream.media.shm import Picture, ShmImage
from framestream.media.xlib import X_DAMAGE_NOTIFY, X_DAMAGE_REPORT_NON_EMPTY, Libs, XEvent

__all__ = ["CaptureError", "DamageRect", "DisplayCapture"]


class DisplayCapture:
    """Damage-driven XShm capture of one X display's root window (BGRX, 32 bits per pixel).

    Owned by one thread. Methods take an internal lock, so a `close()` from another thread is safe: it waits
    for the call in progress (at most one `wait_damage` timeout).
    """

    def __init__(self, display: str, width: int, height: int) -> None:
        self._display_name = display
        self._width = width
        self._height = height
        self._lock = threading.Lock()
        self._closed = False
        self._dpy: int | None = None
        self._damage = 0
        self._region = 0
        self._event = XEvent()
        self._nrects = ctypes.c_int()
        self._fd = -1  # the X connection's, once open (fileno() is asked before every select)
        libs = self._libs = xerrors.setup()
        # Two segments take turns (`grab`): `_front` holds the last grab; the other lacks the rows `_behind` (its
        # picture is older by the last grab's bands; None: by anything).
        self._shms = self._new_buffers()
        self._shms_open = False  # opened with the connection; given back by `drop_buffers`, made again by a grab
        self._screen = self._depth = 0
        self._front = 1
        self._behind: list[tuple[int, int]] | None = None
        self._grabbed = False  # whether the front segment holds a picture yet
        # The row bands the last grab read (None: every row). Paint that raced that grab is in them even outside
        # its damage, so the change check must compare all of them (media/changes.py).
        self.read_bands: list[tuple[int, int]] | None = None
        dpy = libs.XOpenDisplay(display.encode())
        if not dpy:
            raise CaptureError(f"cannot open X display {display!r}")
        self._dpy = dpy
        self._fd = int(libs.XConnectionNumber(dpy))
        xerrors.register(libs, dpy, display)
        try:
            self._setup_display(libs, dpy)
        except BaseException:
            self.close()
            raise

    def _setup_display(self, libs: Libs, dpy: int) -> None:
        name, width, height = self._display_name, self._width, self._height
        screen = libs.XDefaultScreen(dpy)
        self._root = int(libs.XRootWindow(dpy, screen))
        real_w, real_h = libs.XDisplayWidth(dpy, screen), libs.XDisplayHeight(dpy, screen)
        # The capture is the top-left width x height of the screen, which may be larger (see browser/xvfb.py).
        if real_w < width or real_h < height:
            raise CaptureError(f"X display {name} is {real_w}x{real_h}, smaller than {width}x{height}")
        depth = libs.XDefaultDepth(dpy, screen)
        if depth not in (24, 32):
            raise CaptureError(f"X display {name} has depth {depth}, need 24 or 32")
        self._screen, self._depth = screen, depth
        major, minor = ctypes.c_int(), ctypes.c_int()
        if not libs.XShmQueryExtension(dpy):
            raise CaptureError(f"X display {name} lacks the MIT-SHM extension")
        event_base, error_base = ctypes.c_int(), ctypes.c_int()
        if not libs.XDamageQueryExtension(dpy, ctypes.byref(event_base), ctypes.byref(error_base)):
            raise CaptureError(f"X display {name} lacks the DAMAGE extension (Xvfb: +extension DAMAGE)")
        self._damage_notify = event_base.value + X_DAMAGE_NOTIFY
        # Both extensions refuse requests until the client has announced the version it speaks.
        major.value, minor.value = 1, 1
        libs.XDamageQueryVersion(dpy, ctypes.byref(major), ctypes.byref(minor))
        if not libs.XFixesQueryExtension(dpy, ctypes.byref(event_base), ctypes.byref(error_base)):
            raise CaptureError(f"X display {name} lacks the XFIXES extension")
        major.value, minor.value = 5, 0
        libs.XFixesQueryVersion(dpy, ctypes.byref(major), ctypes.byref(minor))
        if major.value < 2:
            raise CaptureError(f"X display {name} has XFIXES {major.value}.{minor.value}, regions need 2.0")

        self._open_buffers(dpy)
        # NonEmpty: the server sends one event when the damage region goes from empty to non-empty and keeps
        # accumulating (and coalescing) everything drawn after it. One XDamageSubtract + XFixesFetchRegion
        # round trip then hands over the whole region as disjoint rectangles and clears it atomically.
        # RawRectangles would send one event per drawing operation (hundreds per Chromium frame, each costing
        # a Python-level XNextEvent) with overlapping rectangles we would have to merge ourselves;
        # DeltaRectangles/BoundingBox still send events in proportion to the drawing. NonEmpty costs O(1)
        # Python work per picture however busy the page is.
        self._damage = int(libs.XDamageCreate(dpy, self._root, X_DAMAGE_REPORT_NON_EMPTY))
        self._region = int(libs.XFixesCreateRegion(dpy, None, 0))
        libs.XSync(dpy, 0)
        xerrors.raise_if_failed(libs, dpy, "creating the damage object")

    # --- helpers ---

    def _new_buffers(self) -> tuple[ShmImage, ShmImage]:
        """Two segments, not opened yet."""
        return ShmImage(self._libs, self._display_name), ShmImage(self._libs, self._display_name)

    def _release_buffers(self, dpy: int | None) -> None:
        """Detach both segments from a live server (None: it is gone), then give them back."""
        if dpy is not None:
            for shm in self._shms:
                shm.detach(dpy)
            self._libs.XSync(dpy, 0)
        for shm in self._shms:
            shm.release()

    def _open_buffers(self, dpy: int) -> None:
        for shm in self._shms:
            shm.open(dpy, self._screen, self._depth, self._width, self._height)
        self._shms_open = True

    def _usable(self) -> int:
        dpy = self._dpy
        if self._closed or dpy is None:
            raise CaptureError(f"capture of {self._display_name} is closed")
        if xerrors.is_lost(dpy):
            raise CaptureError(f"lost the connection to X display {self._display_name}")
        return dpy

    def _collect(self, dpy: int) -> list[DamageRect]:
        """Drain Xlib's queue; if damage was reported, take (and clear) the accumulated region."""
        libs = self._libs
        seen = False
        event = ctypes.byref(self._event)
        while libs.XPending(dpy) > 0:  # flushes, then reads what the socket has without blocking
            libs.XNextEvent(dpy, event)
            if self._event.type == self._damage_notify:
                seen = True
        if not seen:
            xerrors.raise_if_failed(libs, dpy, "reading events")
            return []
        return self._take_region(dpy)

    def _take_region(self, dpy: int) -> list[DamageRect]:
        """Take (and clear) the damage region the server holds: a round trip."""
        libs = self._libs
        libs.XDamageSubtract(dpy, self._damage, 0, self._region)
        rects = libs.XFixesFetchRegion(dpy, self._region, ctypes.byref(self._nrects))
        xerrors.raise_if_failed(libs, dpy, "fetching the damage")
        if not rects:
            return []
        try:
            out: list[DamageRect] = []
            for k in range(self._nrects.value):
                r = rects[k]
                box = clip((r.x, r.y, r.width, r.height), self._width, self._height)
                if box is not None:
                    out.append(DamageRect(*box))
            return out
        finally:
            libs.XFree(rects)

    # --- public API ---

    @property
    def display(self) -> str:
        return self._display_name

    @property
    def width(self) -> int:
        return self._width

    @property
    def height(self) -> int:
        return self._height

    @property
    def closed(self) -> bool:
        return self._closed

    def fileno(self) -> int:
        """The X connection's fd, to select() on together with the worker's wake pipe.

        Xlib may already hold events read off the socket (any round trip, such as a grab, reads them), and
        then the fd is not readable although damage is pending: call `pending_damage()` first and select only
        when it returned [].
        """
        self._usable()  # raises once closed or lost (no lock needed: it only reads)
        return self._fd

    def wait_damage(self, timeout: float) -> list[DamageRect]:
        """Rectangles damaged since the last call (and clears them); blocks up to `timeout` s, [] if none.

        The first call reports the whole screen: the server counts a window as damaged when a damage object
        is created on it, which conveniently asks for the first picture.
        """
        with self._lock:
            dpy = self._usable()
            rects = self._collect(dpy)
            if rects or timeout <= 0:
                return rects
            fd = self._libs.XConnectionNumber(dpy)
            deadline = time.monotonic() + timeout
            while True:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return []
                readable, _, _ = select.select([fd], [], [], remaining)
                if readable:
                    # Readable without damage (an unrelated event, or EOF turned into CaptureError): go on.
                    rects = self._collect(dpy)
                    if rects:
                        return rects

    def pending_damage(self) -> list[DamageRect]:
        """Like `wait_damage(0)`: whatever is already damaged, without blocking."""
        with self._lock:
            return self._collect(self._usable())

    def damage_now(self) -> list[DamageRect]:
        """Like `pending_damage()`, but asked of the server itself rather than read from its events: everything it
        has drawn before this call is in it, even when its event has not reached us yet (X serialises requests)."""
        with self._lock:
            return self._take_region(self._usable())

    def drop_buffers(self) -> None:
        """Give back both XShm segments (2 x 16 MB at 2560x1600), keeping the connection and its damage object, so
        `damage_now` still tells whether the screen changed. The next grab makes them again and reads every row.
        Views already handed out stay readable."""
        with self._lock:
            dpy = self._usable()
            if not self._shms_open:
                return
            self._release_buffers(dpy)
            self._shms = self._new_buffers()
            self._shms_open, self._grabbed, self._behind, self.read_bands = False, False, None, None

    def grab(self, damage: Sequence[DamageRect] | None = None) -> Picture:
        """Read the screen into shared memory and return a (height, width, 4) BGRX view of it.

        No copy: two segments take turns. The view returned stays intact through the next grab (which reads into
        the other segment) and is overwritten by the one after, so copy whatever you keep longer (`grab_copy`).
        Views stay readable after `close()` (the memory is released when the last one is dropped).

        With `damage`, only the full-width row bands covering it are read, plus the bands the last grab read into
        the other segment (the rest of a segment keeps its picture, in place). That is exact when `damage` holds
        *all* rectangles reported since the previous grab; it saves most of the server's copy when little
        changed (3-4 ms a full grab at 2560x1600). `[]` reads nothing and returns the last grab's view. The first
        grab must be a full one (or use the first, whole-screen damage).
        """
        with self._lock:
            dpy = self._usable()
            if not self._shms_open:  # (given back by drop_buffers: every row is read into new ones)
                self._open_buffers(dpy)
                damage = None
            if damage is not None and not damage:
                self.read_bands = []
                return self._shms[self._front].picture
            back = 1 - self._front
            shm = self._shms[back]
            if damage is None or self._behind is None:
                shm.read_rows(dpy, self._root, 0, self._height)
                self.read_bands = None
            else:
                catch_up = [DamageRect(0, y0, self._width, y1 - y0) for y0, y1 in self._behind]
                self.read_bands = row_bands([*damage, *catch_up], self._height)
                for y0, y1 in self.read_bands:
                    shm.read_rows(dpy, self._root, y0, y1)
            # The front segment is now the last picture but one: it lacks what was damaged since, or anything
            # when that is not known (or it holds no picture yet).
            self._behind = None if damage is None or not self._grabbed else row_bands(damage, self._height)
            self._grabbed = True
            self._front = back
            return shm.picture

    def grab_copy(self) -> Picture:
        """`grab()` followed by a copy the caller owns."""
        return self.grab().copy()

    def close(self) -> None:
        """Release everything; safe to call twice, after errors, and after the X server died."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            libs, dpy = self._libs, self._dpy
            live = dpy if dpy is not None and not xerrors.is_lost(dpy) else None
            if live is not None:
                # Courtesy only: the server frees all of these when the connection closes anyway.
                if self._damage:
                    libs.XDamageDestroy(live, self._damage)
                if self._region:
                    libs.XFixesDestroyRegion(live, self._region)
            self._release_buffers(live)
            if dpy is not None:
                libs.XCloseDisplay(dpy)  # after an I/O error this only frees client memory and the fd
                xerrors.unregister(dpy)
                self._dpy = None

    def __enter__(self) -> DisplayCapture:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        state = "closed" if self._closed else "open"
        return f"<DisplayCapture {self._display_name} {self._width}x{self._height} {state}>"
