"""Real X input on a frame's own display, for browser UI that DevTools input cannot reach.

`<select>` lists, date and colour pickers are separate X windows (override-redirect popups) drawn by the browser,
not part of any page: `Input.dispatchMouseEvent` goes to the page under them. While such a popup is on screen the
frame's mouse input goes through XTEST instead, at the same place on the same screen, exactly as a person's mouse
would; otherwise DevTools stays the input path (measured here: a popup appears within one picture of the click
that opens it, and an XTEST click picks the option under it).

Xlib calls block, so they run in a worker thread; one connection per frame, opened on first use and closed with the
frame. X errors (a popup that vanishes between listing and inspecting it) are recorded by `media.xerrors`, never
fatal.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import threading
from dataclasses import dataclass

from framestream.core.errors import BrowserError, CaptureError
from framestream.media import xerrors
from framestream.media.xlib import Libs, declare, load_library

IS_VIEWABLE = 2
BUTTONS = {"left": 1, "middle": 2, "right": 3, "back": 8, "forward": 9}
WHEEL_STEP_PX = 53  # CSS pixels one wheel click scrolls in Chromium on Linux (3 lines)


class _WindowAttributes(ctypes.Structure):
    _fields_ = [
        ("x", ctypes.c_int), ("y", ctypes.c_int), ("width", ctypes.c_int), ("height", ctypes.c_int),
        ("border_width", ctypes.c_int), ("depth", ctypes.c_int), ("visual", ctypes.c_void_p),
        ("root", ctypes.c_ulong), ("class_", ctypes.c_int), ("bit_gravity", ctypes.c_int),
        ("win_gravity", ctypes.c_int), ("backing_store", ctypes.c_int), ("backing_planes", ctypes.c_ulong),
        ("backing_pixel", ctypes.c_ulong), ("save_under", ctypes.c_int), ("colormap", ctypes.c_ulong),
        ("map_installed", ctypes.c_int), ("map_state", ctypes.c_int), ("all_event_masks", ctypes.c_long),
        ("your_event_mask", ctypes.c_long), ("do_not_propagate_mask", ctypes.c_long),
        ("override_redirect", ctypes.c_int), ("screen", ctypes.c_void_p),
    ]


class _InputLibs:
    """XTEST and the two window queries we need, on top of the capture's Xlib declarations."""

    def __init__(self) -> None:
        vp, i, u, ul = ctypes.c_void_p, ctypes.c_int, ctypes.c_uint, ctypes.c_ulong
        x11 = load_library("X11", "libX11.so.6")
        xtst = load_library("Xtst", "libXtst.so.6")
        children = ctypes.POINTER(ctypes.POINTER(ctypes.c_ulong))
        self.XQueryTree = declare(x11, "XQueryTree", i, vp, ul, ctypes.POINTER(ul), ctypes.POINTER(ul), children,
                                  ctypes.POINTER(u))
        self.XGetWindowAttributes = declare(x11, "XGetWindowAttributes", i, vp, ul,
                                            ctypes.POINTER(_WindowAttributes))
        self.XTestFakeMotionEvent = declare(xtst, "XTestFakeMotionEvent", i, vp, i, i, i, ul)
        self.XTestFakeButtonEvent = declare(xtst, "XTestFakeButtonEvent", i, vp, u, i, ul)


@dataclass(frozen=True, slots=True)
class Popup:
    x: int
    y: int
    width: int
    height: int


class DisplayInput:
    """XTEST pointer input and popup detection on one X display (device pixels)."""

    _input_libs: _InputLibs | None = None
    _input_libs_lock = threading.Lock()

    def __init__(self, display: str, width: int, height: int) -> None:
        self.display = display
        self.width = width
        self.height = height
        self._libs: Libs | None = None
        self._dpy: int | None = None
        self._lock = threading.Lock()  # one thread at a time on the connection

    def _connect(self) -> tuple[Libs, _InputLibs, int]:
        if self._libs is None:
            self._libs = xerrors.setup()
        with DisplayInput._input_libs_lock:
            if DisplayInput._input_libs is None:
                DisplayInput._input_libs = _InputLibs()
        if self._dpy is None:
            dpy = self._libs.XOpenDisplay(self.display.encode())
            if not dpy:
                raise BrowserError(f"cannot open X display {self.display} for input")
            xerrors.register(self._libs, dpy, self.display)
            self._dpy = dpy
        return self._libs, DisplayInput._input_libs, self._dpy

    def popups_now(self) -> list[Popup]:
        """Override-redirect windows on screen: the browser's own popups (select lists, pickers, menus)."""
        with self._lock:
            libs, xi, dpy = self._connect()
            root = libs.XRootWindow(dpy, libs.XDefaultScreen(dpy))
            root_ret, parent_ret = ctypes.c_ulong(), ctypes.c_ulong()
            children = ctypes.POINTER(ctypes.c_ulong)()
            count = ctypes.c_uint()
            if not xi.XQueryTree(dpy, root, ctypes.byref(root_ret), ctypes.byref(parent_ret), ctypes.byref(children),
                                 ctypes.byref(count)):
                self._check(libs, dpy, "listing windows")
                return []
            windows = [children[k] for k in range(count.value)]
            if children:
                libs.XFree(children)
            popups = []
            attrs = _WindowAttributes()
            for window in windows:
                if not xi.XGetWindowAttributes(dpy, window, ctypes.byref(attrs)):
                    continue  # gone since the listing: its BadWindow is recorded and dropped below
                if (attrs.override_redirect and attrs.map_state == IS_VIEWABLE and attrs.width > 1
                        and attrs.height > 1 and attrs.x < self.width and attrs.y < self.height
                        and attrs.x + attrs.width > 0 and attrs.y + attrs.height > 0):
                    popups.append(Popup(attrs.x, attrs.y, attrs.width, attrs.height))
            if xerrors.is_lost(dpy):
                raise BrowserError(f"lost the connection to X display {self.display}")
            with contextlib.suppress(CaptureError):  # a BadWindow: a window went away between two calls
                xerrors.raise_if_failed(libs, dpy, "inspecting windows")
            return popups

    def pointer(self, action: str, x: int, y: int, button: str | None = None) -> None:
        """Move to (x, y) and press or release `button` there ("move" moves only)."""
        with self._lock:
            libs, xi, dpy = self._connect()
            xi.XTestFakeMotionEvent(dpy, -1, x, y, 0)
            code = BUTTONS.get(button or "")
            if action in ("down", "up") and code is not None:
                xi.XTestFakeButtonEvent(dpy, code, 1 if action == "down" else 0, 0)
            libs.XSync(dpy, 0)
            self._check(libs, dpy, "sending pointer input")

    def wheel(self, x: int, y: int, dx: float, dy: float) -> None:
        with self._lock:
            libs, xi, dpy = self._connect()
            xi.XTestFakeMotionEvent(dpy, -1, x, y, 0)
            for delta, negative, positive in ((dy, 4, 5), (dx, 6, 7)):
                clicks = min(20, max(1, round(abs(delta) / WHEEL_STEP_PX))) if delta else 0
                for _ in range(clicks):
                    code = positive if delta > 0 else negative
                    xi.XTestFakeButtonEvent(dpy, code, 1, 0)
                    xi.XTestFakeButtonEvent(dpy, code, 0, 0)
            libs.XSync(dpy, 0)
            self._check(libs, dpy, "sending wheel input")

    def close(self) -> None:
        with self._lock:
            if self._dpy is not None and self._libs is not None:
                dpy, self._dpy = self._dpy, None
                if not xerrors.is_lost(dpy):
                    self._libs.XCloseDisplay(dpy)
                xerrors.unregister(dpy)

    def _check(self, libs: Libs, dpy: int, doing: str) -> None:
        try:
            xerrors.raise_if_failed(libs, dpy, doing)
        except CaptureError as exc:
            raise BrowserError(str(exc)) from exc

    # -- from the event loop -----------------------------------------------------------------------------

    async def popups(self) -> list[Popup]:
        return await asyncio.to_thread(self.popups_now)

    async def send_pointer(self, action: str, x: int, y: int, button: str | None = None) -> None:
        await asyncio.to_thread(self.pointer, action, x, y, button)

    async def send_wheel(self, x: int, y: int, dx: float, dy: float) -> None:
        await asyncio.to_thread(self.wheel, x, y, dx, dy)

    async def aclose(self) -> None:
        await asyncio.to_thread(self.close)


__all__ = ["BUTTONS", "DisplayInput", "Popup"]
