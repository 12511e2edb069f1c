"""Capture of one X display through X shared memory, driven by DAMAGE events, in pure ctypes.

One `DisplayCapture` per live frame, owned by that frame's worker thread (never the event loop). The worker's
loop, with `kept` the last picture it encoded (a copy)::

    rects = cap.pending_damage()              # drains what Xlib buffered; only then is select() reliable
    if not rects:
        select([cap.fileno(), wake_fd], [], [], timeout)   # or simply rects = cap.wait_damage(timeout)
        rects = cap.pending_damage()
    if rects:                                 # the damage is subtracted *before* the grab, so a paint that
        pic = cap.grab(rects)                 # races the grab is reported again next time
        rows = changed_rows(kept, pic, rects) # None: identical repaint, skip the encoder
        if rows:
            kept[rows[0]:rows[1]] = pic[rows[0]:rows[1]]
            encode(kept)

Robustness: Xlib's default handlers call exit() on any protocol or I/O error. This module installs
process-wide handlers (chaining to the previous ones for displays it does not own) and, per display, an
I/O-error *exit* handler (libX11 >= 1.7), so an Xvfb that dies turns into `CaptureError` on the next call
instead of killing the service. The shared-memory segment is marked IPC_RMID as soon as the server has
attached it, so it cannot outlive the process even after SIGKILL.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import logging
import os
import select
import threading
import time
import weakref
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from types import TracebackType
from typing import Any

import numpy as np
import numpy.typing as npt

from framestream.errors import CaptureError

__all__ = ["CaptureError", "DamageRect", "DisplayCapture", "changed_rows"]

log = logging.getLogger(__name__)

Picture = npt.NDArray[np.uint8]


@dataclass(frozen=True, slots=True)
class DamageRect:
    """A damaged rectangle in root-window pixels, clipped to the screen."""

    x: int
    y: int
    width: int
    height: int


# --- C declarations -------------------------------------------------------------------------------------

_ZPIXMAP = 2
_LSB_FIRST = 0
_ALL_PLANES = 0xFFFFFFFF
_IPC_PRIVATE = 0
_IPC_CREAT = 0o1000
_IPC_RMID = 0
# NonEmpty: the server sends one event when the damage region goes from empty to non-empty and keeps
# accumulating (and coalescing) everything drawn after it. One XDamageSubtract + XFixesFetchRegion round trip
# then hands over the whole region as disjoint rectangles and clears it atomically. RawRectangles would send
# one event per drawing operation (hundreds per Chromium frame, each costing a Python-level XNextEvent) with
# overlapping rectangles we would have to merge ourselves; DeltaRectangles/BoundingBox still send events in
# proportion to the drawing. NonEmpty costs O(1) Python work per picture however busy the page is.
_X_DAMAGE_REPORT_NON_EMPTY = 3
_X_DAMAGE_NOTIFY = 0
# Above this many damaged rectangles, compare their bounding box in one pass: numpy's per-call overhead
# (~5 us) would otherwise dominate the memory-bound comparison.
_MAX_RECTS = 16


class _XErrorEvent(ctypes.Structure):
    _fields_ = (
        ("type", ctypes.c_int),
        ("display", ctypes.c_void_p),
        ("resourceid", ctypes.c_ulong),
        ("serial", ctypes.c_ulong),
        ("error_code", ctypes.c_ubyte),
        ("request_code", ctypes.c_ubyte),
        ("minor_code", ctypes.c_ubyte),
    )


class _XShmSegmentInfo(ctypes.Structure):
    _fields_ = (
        ("shmseg", ctypes.c_ulong),
        ("shmid", ctypes.c_int),
        ("shmaddr", ctypes.c_void_p),
        ("readOnly", ctypes.c_int),
    )


class _XImage(ctypes.Structure):
    _fields_ = (
        ("width", ctypes.c_int),
        ("height", ctypes.c_int),
        ("xoffset", ctypes.c_int),
        ("format", ctypes.c_int),
        ("data", ctypes.c_void_p),
        ("byte_order", ctypes.c_int),
        ("bitmap_unit", ctypes.c_int),
        ("bitmap_bit_order", ctypes.c_int),
        ("bitmap_pad", ctypes.c_int),
        ("depth", ctypes.c_int),
        ("bytes_per_line", ctypes.c_int),
        ("bits_per_pixel", ctypes.c_int),
        ("red_mask", ctypes.c_ulong),
        ("green_mask", ctypes.c_ulong),
        ("blue_mask", ctypes.c_ulong),
        ("obdata", ctypes.c_void_p),
        ("funcs", ctypes.c_void_p * 6),
    )


class _XEvent(ctypes.Union):
    _fields_ = (("type", ctypes.c_int), ("pad", ctypes.c_long * 24))


class _XRectangle(ctypes.Structure):
    _fields_ = (
        ("x", ctypes.c_short),
        ("y", ctypes.c_short),
        ("width", ctypes.c_ushort),
        ("height", ctypes.c_ushort),
    )


_ErrorHandler = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.POINTER(_XErrorEvent))
_IOErrorHandler = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p)
_IOErrorExitHandler = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p)

_Fn = Callable[..., Any]


def _load(name: str, soname: str) -> ctypes.CDLL:
    for candidate in (soname, ctypes.util.find_library(name)):
        if candidate:
            try:
                return ctypes.CDLL(candidate, use_errno=True)
            except OSError:
                continue
    raise CaptureError(f"cannot load {soname} (install the Debian package providing it)")


def _fn(lib: ctypes.CDLL, name: str, restype: Any, *argtypes: Any) -> _Fn:
    try:
        f = getattr(lib, name)
    except AttributeError:
        raise CaptureError(f"{lib._name} has no {name}") from None
    f.restype = restype
    f.argtypes = argtypes
    return f  # type: ignore[no-any-return]


class _Libs:
    """The few entry points we use, with their C signatures (ctypes would otherwise truncate pointers)."""

    def __init__(self) -> None:
        vp, i, u, ul = ctypes.c_void_p, ctypes.c_int, ctypes.c_uint, ctypes.c_ulong
        pi = ctypes.POINTER(ctypes.c_int)
        x11 = _load("X11", "libX11.so.6")
        xext = _load("Xext", "libXext.so.6")
        xdamage = _load("Xdamage", "libXdamage.so.1")
        xfixes = _load("Xfixes", "libXfixes.so.3")
        libc = _load("c", "libc.so.6")
        self.XInitThreads = _fn(x11, "XInitThreads", i)
        self.XOpenDisplay = _fn(x11, "XOpenDisplay", vp, ctypes.c_char_p)
        self.XCloseDisplay = _fn(x11, "XCloseDisplay", i, vp)
        self.XSetErrorHandler = _fn(x11, "XSetErrorHandler", vp, _ErrorHandler)
        self.XSetIOErrorHandler = _fn(x11, "XSetIOErrorHandler", vp, _IOErrorHandler)
        # libX11 >= 1.7 only. Without it a lost connection can only end in exit(): refuse to run.
        self.XSetIOErrorExitHandler = _fn(x11, "XSetIOErrorExitHandler", None, vp, _IOErrorExitHandler, vp)
        self.XGetErrorText = _fn(x11, "XGetErrorText", i, vp, i, ctypes.c_char_p, i)
        self.XConnectionNumber = _fn(x11, "XConnectionNumber", i, vp)
        self.XDefaultScreen = _fn(x11, "XDefaultScreen", i, vp)
        self.XRootWindow = _fn(x11, "XRootWindow", ul, vp, i)
        self.XDisplayWidth = _fn(x11, "XDisplayWidth", i, vp, i)
        self.XDisplayHeight = _fn(x11, "XDisplayHeight", i, vp, i)
        self.XDefaultDepth = _fn(x11, "XDefaultDepth", i, vp, i)
        self.XDefaultVisual = _fn(x11, "XDefaultVisual", vp, vp, i)
        self.XSync = _fn(x11, "XSync", i, vp, i)
        self.XPending = _fn(x11, "XPending", i, vp)
        self.XNextEvent = _fn(x11, "XNextEvent", i, vp, ctypes.POINTER(_XEvent))
        self.XFree = _fn(x11, "XFree", i, vp)
        self.XDestroyImage = _fn(x11, "XDestroyImage", i, ctypes.POINTER(_XImage))
        shm_info = ctypes.POINTER(_XShmSegmentInfo)
        self.XShmQueryExtension = _fn(xext, "XShmQueryExtension", i, vp)
        self.XShmCreateImage = _fn(
            xext, "XShmCreateImage", ctypes.POINTER(_XImage), vp, vp, u, i, vp, shm_info, u, u
        )
        self.XShmAttach = _fn(xext, "XShmAttach", i, vp, shm_info)
        self.XShmDetach = _fn(xext, "XShmDetach", i, vp, shm_info)
        self.XShmGetImage = _fn(xext, "XShmGetImage", i, vp, ul, ctypes.POINTER(_XImage), i, i, ul)
        self.XDamageQueryExtension = _fn(xdamage, "XDamageQueryExtension", i, vp, pi, pi)
        self.XDamageQueryVersion = _fn(xdamage, "XDamageQueryVersion", i, vp, pi, pi)
        self.XDamageCreate = _fn(xdamage, "XDamageCreate", ul, vp, ul, i)
        self.XDamageSubtract = _fn(xdamage, "XDamageSubtract", None, vp, ul, ul, ul)
        self.XDamageDestroy = _fn(xdamage, "XDamageDestroy", None, vp, ul)
        self.XFixesQueryExtension = _fn(xfixes, "XFixesQueryExtension", i, vp, pi, pi)
        self.XFixesQueryVersion = _fn(xfixes, "XFixesQueryVersion", i, vp, pi, pi)
        self.XFixesCreateRegion = _fn(xfixes, "XFixesCreateRegion", ul, vp, vp, i)
        self.XFixesDestroyRegion = _fn(xfixes, "XFixesDestroyRegion", None, vp, ul)
        self.XFixesFetchRegion = _fn(xfixes, "XFixesFetchRegion", ctypes.POINTER(_XRectangle), vp, ul, pi)
        self.shmget = _fn(libc, "shmget", i, i, ctypes.c_size_t, i)
        self.shmat = _fn(libc, "shmat", vp, i, vp, i)
        self.shmdt = _fn(libc, "shmdt", i, vp)
        self.shmctl = _fn(libc, "shmctl", i, i, i, vp)


# --- process-wide Xlib error handling -------------------------------------------------------------------
# Xlib's error handlers are process-global. Ours only act for displays this module opened (`_owned`) and pass
# anything else to whatever was installed before, so other Xlib users keep their semantics. Callbacks run in
# the worker thread that made the failing Xlib call (ctypes takes the GIL for them); set/dict operations
# are atomic under the GIL, so the registries need no lock of their own.

_owned: dict[int, str] = {}  # Display* -> display name, for the displays this module opened
_lost: set[int] = set()  # displays whose connection hit an I/O error
_errors: dict[int, tuple[int, int, int]] = {}  # Display* -> (error_code, request_code, minor_code), last one


def _on_error(dpy: int | None, event: Any) -> int:
    ev = event.contents
    if dpy in _owned:
        _errors[dpy] = (int(ev.error_code), int(ev.request_code), int(ev.minor_code))
        return 0
    if _Process.prev_error:
        return int(_Process.prev_error(dpy, event))
    return 0


def _on_io_error(dpy: int | None) -> int:
    if dpy in _owned:
        # Returning is safe since libX11 1.7: Xlib then calls the per-display exit handler below (which also
        # returns), marks the display dead and makes every later call on it a cheap no-op.
        if dpy not in _lost:
            _lost.add(dpy)
            log.warning("lost the connection to X display %s; its capture raises CaptureError", _owned[dpy])
        return 0
    if _Process.prev_io_error:
        return int(_Process.prev_io_error(dpy))
    return 0


def _on_io_exit(dpy: int | None, _data: int | None) -> None:
    if dpy is not None:
        _lost.add(dpy)


# ctypes callback objects must stay referenced for as long as C may call them: module globals do that.
_error_cb = _ErrorHandler(_on_error)
_io_error_cb = _IOErrorHandler(_on_io_error)
_io_exit_cb = _IOErrorExitHandler(_on_io_exit)


class _Process:
    """Once-per-process state: the loaded libraries and the handlers ours replaced."""

    lock = threading.Lock()
    libs: _Libs | None = None
    prev_error: Any = None
    prev_io_error: Any = None


def _setup() -> _Libs:
    """Load the libraries, XInitThreads() and install the handlers, once per process."""
    with _Process.lock:
        if _Process.libs is None:
            libs = _Libs()
            # Every frame's worker thread drives its own Display; Xlib's global state (handlers, the
            # extension registries) still needs its locks. libX11 >= 1.8 calls this itself; older ones need it
            # before any other Xlib call, hence here, first.
            libs.XInitThreads()
            prev = libs.XSetErrorHandler(_error_cb)
            _Process.prev_error = _ErrorHandler(prev) if prev else None
            prev = libs.XSetIOErrorHandler(_io_error_cb)
            _Process.prev_io_error = _IOErrorHandler(prev) if prev else None
            _Process.libs = libs
        return _Process.libs


def _shmdt(libs: _Libs, addr: int) -> None:
    libs.shmdt(addr)


# --- the capture ---------------------------------------------------------------------------------------


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
        self._image: Any = None  # POINTER(_XImage)
        self._shminfo = _XShmSegmentInfo(shmid=-1)
        self._attached = False
        self._damage = 0
        self._region = 0
        self._buffer: Any = None  # ctypes array over the segment; views of it keep it (and the mapping) alive
        self._picture: Picture | None = None
        self._event = _XEvent()
        self._nrects = ctypes.c_int()
        libs = self._libs = _setup()
        dpy = libs.XOpenDisplay(display.encode())
        if not dpy:
            raise CaptureError(f"cannot open X display {display!r}")
        _lost.discard(dpy)  # the address may belong to an earlier, closed display
        _errors.pop(dpy, None)
        _owned[dpy] = display
        self._dpy = dpy
        libs.XSetIOErrorExitHandler(dpy, _io_exit_cb, None)
        try:
            self._setup_display(libs, dpy)
        except BaseException:
            self.close()
            raise

    def _setup_display(self, libs: _Libs, dpy: int) -> None:
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
        major, minor = ctypes.c_int(), ctypes.c_int()
        if not libs.XShmQueryExtension(dpy):
            raise CaptureError(f"X display {name} lacks the MIT-SHM extension")
        event_base, error_base = ctypes.c_int(), ctypes.c_int()
        if not libs.XDamageQueryExtension(dpy, ctypes.byref(event_base), ctypes.byref(error_base)):
            raise CaptureError(f"X display {name} lacks the DAMAGE extension (Xvfb: +extension DAMAGE)")
        self._damage_notify = event_base.value + _X_DAMAGE_NOTIFY
        # Both extensions refuse requests until the client has announced the version it speaks.
        major.value, minor.value = 1, 1
        libs.XDamageQueryVersion(dpy, ctypes.byref(major), ctypes.byref(minor))
        if not libs.XFixesQueryExtension(dpy, ctypes.byref(event_base), ctypes.byref(error_base)):
            raise CaptureError(f"X display {name} lacks the XFIXES extension")
        major.value, minor.value = 5, 0
        libs.XFixesQueryVersion(dpy, ctypes.byref(major), ctypes.byref(minor))
        if major.value < 2:
            raise CaptureError(f"X display {name} has XFIXES {major.value}.{minor.value}, regions need 2.0")

        image = libs.XShmCreateImage(
            dpy,
            libs.XDefaultVisual(dpy, screen),
            depth,
            _ZPIXMAP,
            None,
            ctypes.byref(self._shminfo),
            width,
            height,
        )
        if not image:
            raise CaptureError(f"XShmCreateImage failed on {name}")
        self._image = image
        img = image.contents
        masks = (img.red_mask, img.green_mask, img.blue_mask)
        if img.bits_per_pixel != 32 or img.byte_order != _LSB_FIRST or masks != (0xFF0000, 0xFF00, 0xFF):
            raise CaptureError(
                f"X display {name} pixel format is not BGRX: {img.bits_per_pixel} bpp, byte order "
                f"{img.byte_order}, masks {tuple(hex(m) for m in masks)}"
            )
        stride = img.bytes_per_line
        size = stride * height
        self._attach_shm(libs, dpy, size)
        img.data = self._shminfo.shmaddr
        addr = int(self._shminfo.shmaddr)
        buffer = (ctypes.c_ubyte * size).from_address(addr)
        # Detach when the last view dies, not at close(): a view still held by a caller must never point at
        # unmapped memory (that would be a segfault, not an exception).
        weakref.finalize(buffer, _shmdt, libs, addr)
        self._buffer = buffer
        self._picture = np.ndarray((height, width, 4), np.uint8, buffer, 0, (stride, 4, 1))

        self._damage = int(libs.XDamageCreate(dpy, self._root, _X_DAMAGE_REPORT_NON_EMPTY))
        self._region = int(libs.XFixesCreateRegion(dpy, None, 0))
        libs.XSync(dpy, 0)
        self._raise_if_failed("creating the damage object")

    def _attach_shm(self, libs: _Libs, dpy: int, size: int) -> None:
        info = self._shminfo
        shmid = libs.shmget(_IPC_PRIVATE, size, _IPC_CREAT | 0o600)
        if shmid < 0:
            raise CaptureError(f"shmget({size}) failed: {os.strerror(ctypes.get_errno())}")
        try:
            addr = libs.shmat(shmid, None, 0)
            if addr is None or addr == ctypes.c_void_p(-1).value:
                raise CaptureError(f"shmat failed: {os.strerror(ctypes.get_errno())}")
            info.shmid, info.shmaddr, info.readOnly = shmid, addr, 0
            libs.XShmAttach(dpy, ctypes.byref(info))
            libs.XSync(dpy, 0)  # the server must have attached before we may remove the id
            self._attached = True
        finally:
            # From here the segment lives exactly as long as its attachments: no leak even on SIGKILL.
            libs.shmctl(shmid, _IPC_RMID, None)
        self._raise_if_failed("attaching the shared memory (is the X server in another IPC namespace?)")

    # --- helpers ---

    def _raise_if_failed(self, doing: str) -> None:
        dpy = self._dpy
        if dpy is None:
            raise CaptureError(f"capture of {self._display_name} is closed")
        if dpy in _lost:
            raise CaptureError(f"lost the connection to X display {self._display_name} while {doing}")
        err = _errors.pop(dpy, None)
        if err is not None:
            code, request, minor = err
            text = ctypes.create_string_buffer(256)
            self._libs.XGetErrorText(dpy, code, text, len(text))
            raise CaptureError(
                f"X error on {self._display_name} while {doing}: {text.value.decode(errors='replace')} "
                f"(request {request}.{minor})"
            )

    def _usable(self) -> int:
        dpy = self._dpy
        if self._closed or dpy is None:
            raise CaptureError(f"capture of {self._display_name} is closed")
        if dpy in _lost:
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
            self._raise_if_failed("reading events")
            return []
        libs.XDamageSubtract(dpy, self._damage, 0, self._region)
        rects = libs.XFixesFetchRegion(dpy, self._region, ctypes.byref(self._nrects))
        self._raise_if_failed("fetching the damage")
        if not rects:
            return []
        try:
            return _clip(rects, self._nrects.value, self._width, self._height)
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
        with self._lock:
            return int(self._libs.XConnectionNumber(self._usable()))

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

    def grab(self, damage: Sequence[DamageRect] | None = None) -> Picture:
        """Read the screen into the shared segment and return a (height, width, 4) BGRX view of it.

        No copy: the same memory is overwritten by the next grab, so copy whatever you keep (`grab_copy`).
        Views stay readable after `close()` (the memory is released when the last one is dropped).

        With `damage`, only the full-width row bands covering it are read (in place, so the rest of the
        picture keeps the previous grab). That is exact when `damage` holds *all* rectangles reported since
        the previous grab; it saves most of the server's copy when little changed (3-4 ms a full grab at
        2560x1600). `[]` reads nothing. The first grab must be a full one (or use the first, whole-screen
        damage).
        """
        with self._lock:
            dpy = self._usable()
            if damage is None:
                self._get_image(dpy, 0, self._height)
            else:
                for y0, y1 in _row_bands(damage, self._height):
                    self._get_image(dpy, y0, y1)
            assert self._picture is not None
            return self._picture

    def _get_image(self, dpy: int, y0: int, y1: int) -> None:
        img = self._image.contents
        full_height, base = img.height, img.data
        # XShmGetImage writes at (image.data - shmaddr) with the image's stride: a full-width header moved
        # to row y0 lands the band exactly where a full grab would put it.
        img.height, img.data = y1 - y0, base + y0 * img.bytes_per_line
        try:
            ok = self._libs.XShmGetImage(dpy, self._root, self._image, 0, y0, _ALL_PLANES)
        finally:
            img.height, img.data = full_height, base
        if not ok or dpy in _lost:
            self._raise_if_failed("grabbing")
            raise CaptureError(f"XShmGetImage failed on {self._display_name}")

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
            if dpy is not None and dpy not in _lost:
                # Courtesy only: the server frees all of these when the connection closes anyway.
                if self._damage:
                    libs.XDamageDestroy(dpy, self._damage)
                if self._region:
                    libs.XFixesDestroyRegion(dpy, self._region)
                if self._attached:
                    libs.XShmDetach(dpy, ctypes.byref(self._shminfo))
                libs.XSync(dpy, 0)
            if self._image:
                self._image.contents.data = None  # the segment is not malloc'ed: never let Xlib free() it
                libs.XDestroyImage(self._image)
                self._image = None
            if self._buffer is None and self._shminfo.shmaddr:
                libs.shmdt(self._shminfo.shmaddr)  # attached, but failed before the view was built
            # Our references go; the finalizer detaches now, or when the caller's last view is dropped.
            self._picture = None
            self._buffer = None
            if dpy is not None:
                libs.XCloseDisplay(dpy)  # after an I/O error this only frees client memory and the fd
                _owned.pop(dpy, None)
                _lost.discard(dpy)
                _errors.pop(dpy, None)
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


# Bands closer than this many rows are read as one (a round trip costs more than copying a few rows), and
# more than this many bands are read as their bounding band.
_BAND_GAP = 32
_MAX_BANDS = 4


def _row_bands(damage: Sequence[DamageRect], height: int) -> list[tuple[int, int]]:
    spans = sorted((max(0, r.y), min(height, r.y + r.height)) for r in damage if r.width > 0 and r.height > 0)
    bands: list[tuple[int, int]] = []
    for y0, y1 in spans:
        if y1 <= y0:
            continue
        if bands and y0 <= bands[-1][1] + _BAND_GAP:
            bands[-1] = (bands[-1][0], max(bands[-1][1], y1))
        else:
            bands.append((y0, y1))
    if len(bands) > _MAX_BANDS:
        bands = [(bands[0][0], max(b[1] for b in bands))]
    return bands


def _clip(rects: Any, count: int, width: int, height: int) -> list[DamageRect]:
    out: list[DamageRect] = []
    for k in range(count):
        r = rects[k]
        x0, y0 = max(0, r.x), max(0, r.y)
        x1, y1 = min(width, r.x + r.width), min(height, r.y + r.height)
        if x1 > x0 and y1 > y0:
            out.append(DamageRect(x0, y0, x1 - x0, y1 - y0))
    return out


# --- change check ---------------------------------------------------------------------------------------


def changed_rows(
    prev: Picture, cur: Picture, rect_hint: Sequence[DamageRect] | None = None
) -> tuple[int, int] | None:
    """The rows [top, bottom) where `cur` differs from `prev` inside `rect_hint`, or None if it does not.

    Chromium often repaints identical pixels; None lets the caller skip the encoder. Pictures are
    (height, width, 4) uint8; only the hinted rectangles are compared (the whole picture when the hint is
    None; nothing when it is empty). A shape change counts as all rows changed. Each rectangle is scanned
    from the top to its first changed row and from the bottom to its last one, in growing blocks, so a
    changed picture costs little more than its unchanged margins; an unchanged one costs one read of both
    (memory bound).
    """
    if prev.shape != cur.shape:
        return (0, int(cur.shape[0]))
    height, width = int(cur.shape[0]), int(cur.shape[1])
    boxes: list[tuple[int, int, int, int]] = []
    if rect_hint is None:
        boxes.append((0, 0, width, height))
    else:
        for r in rect_hint:
            x0, y0 = max(0, r.x), max(0, r.y)
            x1, y1 = min(width, r.x + r.width), min(height, r.y + r.height)
            if x1 > x0 and y1 > y0:
                boxes.append((x0, y0, x1, y1))
        if len(boxes) > _MAX_RECTS:
            boxes = [
                (
                    min(b[0] for b in boxes),
                    min(b[1] for b in boxes),
                    max(b[2] for b in boxes),
                    max(b[3] for b in boxes),
                )
            ]
    top, bottom = height, 0
    for x0, y0, x1, y1 in boxes:
        pa, pb = prev[y0:y1, x0:x1], cur[y0:y1, x0:x1]
        wide = _wide_ok(pa) and _wide_ok(pb)  # both sides must use the same word size
        a, b = _words(pa, wide), _words(pb, wide)
        first = _first_changed(a, b)
        if first is not None:
            last = _last_changed(a, b, first)
            top, bottom = min(top, y0 + first), max(bottom, y0 + last + 1)
    return (top, bottom) if bottom > 0 else None


def _wide_ok(region: Picture) -> bool:
    """Whether (h, w, 4) bytes can be read as aligned uint64 pairs of pixels without a copy."""
    s0, s1, s2 = region.strides
    return s1 == 4 and s2 == 1 and region.shape[1] % 2 == 0 and s0 % 8 == 0 and region.ctypes.data % 8 == 0


def _words(region: Picture, wide: bool) -> npt.NDArray[np.uint32] | npt.NDArray[np.uint64]:
    """View (h, w, 4) bytes as (h, w/2) uint64 (half the elements to compare) or (h, w) uint32."""
    rows, cols = region.shape[0], region.shape[1]
    if wide:
        flat = np.lib.stride_tricks.as_strided(region, (rows, cols * 4), (region.strides[0], 1))
        return flat.view(np.uint64)
    if region.strides[1:] != (4, 1):
        region = np.ascontiguousarray(region)
    return region.view(np.uint32)[:, :, 0]


# Rows are compared in blocks that start small (a change near an edge is found after reading little) and
# double up to about 512 KiB per side (the comparison's temporaries stay in cache and out of mmap).
_FIRST_BLOCK = 16
_MAX_BLOCK_BYTES = 1 << 19


@functools.cache
def _memcmp() -> _Fn:
    return _fn(
        _load("c", "libc.so.6"), "memcmp", ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t
    )


def _same(a: npt.NDArray[Any], b: npt.NDArray[Any]) -> bool:
    # memcmp when both blocks are one run of memory (full-width rows): ~25% faster than numpy, no temporaries.
    if a.flags.c_contiguous and b.flags.c_contiguous:
        return bool(_memcmp()(a.ctypes.data, b.ctypes.data, a.nbytes) == 0)
    return bool(np.array_equal(a, b))


def _block_cap(a: npt.NDArray[Any]) -> int:
    return max(_FIRST_BLOCK, _MAX_BLOCK_BYTES // max(1, int(a.shape[1]) * a.itemsize))


def _first_changed(a: npt.NDArray[Any], b: npt.NDArray[Any]) -> int | None:
    rows, y, step, cap = int(a.shape[0]), 0, _FIRST_BLOCK, _block_cap(a)
    while y < rows:
        end = min(rows, y + step)
        if not _same(a[y:end], b[y:end]):
            return y + int(np.flatnonzero((a[y:end] != b[y:end]).any(axis=1))[0])
        y, step = end, min(cap, step * 2)
    return None


def _last_changed(a: npt.NDArray[Any], b: npt.NDArray[Any], floor: int) -> int:
    y, step, cap = int(a.shape[0]), _FIRST_BLOCK, _block_cap(a)
    while y > floor:
        start = max(floor, y - step)
        if not _same(a[start:y], b[start:y]):
            return start + int(np.flatnonzero((a[start:y] != b[start:y]).any(axis=1))[-1])
        y, step = start, min(cap, step * 2)
    return floor  # the floor row is known to differ
