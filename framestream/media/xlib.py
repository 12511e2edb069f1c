"""The C side of the capture: the Xlib, XShm, DAMAGE, XFixes and SysV shm entry points it calls, in ctypes.

Declarations only: every function gets its real C signature (ctypes would otherwise truncate pointers to int),
and a missing library or symbol is a `CaptureError` naming it, not an AttributeError at first use.
"""

from __future__ import annotations

import ctypes
import ctypes.util
from collections.abc import Callable
from typing import Any

from framestream.core.errors import CaptureError

ZPIXMAP = 2
LSB_FIRST = 0
ALL_PLANES = 0xFFFFFFFF
IPC_PRIVATE = 0
IPC_CREAT = 0o1000
IPC_RMID = 0
X_DAMAGE_REPORT_NON_EMPTY = 3
X_DAMAGE_NOTIFY = 0  # added to the extension's event base


class XErrorEvent(ctypes.Structure):
    _fields_ = (
        ("type", ctypes.c_int),
        ("display", ctypes.c_void_p),
        ("resourceid", ctypes.c_ulong),
        ("serial", ctypes.c_ulong),
        ("error_code", ctypes.c_ubyte),
        ("request_code", ctypes.c_ubyte),
        ("minor_code", ctypes.c_ubyte),
    )


class XShmSegmentInfo(ctypes.Structure):
    _fields_ = (
        ("shmseg", ctypes.c_ulong),
        ("shmid", ctypes.c_int),
        ("shmaddr", ctypes.c_void_p),
        ("readOnly", ctypes.c_int),
    )


class XImage(ctypes.Structure):
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


class XEvent(ctypes.Union):
    _fields_ = (("type", ctypes.c_int), ("pad", ctypes.c_long * 24))


class XRectangle(ctypes.Structure):
    _fields_ = (
        ("x", ctypes.c_short),
        ("y", ctypes.c_short),
        ("width", ctypes.c_ushort),
        ("height", ctypes.c_ushort),
    )


ErrorHandler = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.POINTER(XErrorEvent))
IOErrorHandler = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p)
IOErrorExitHandler = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p)

CFunction = Callable[..., Any]


def load_library(name: str, soname: str) -> ctypes.CDLL:
    for candidate in (soname, ctypes.util.find_library(name)):
        if candidate:
            try:
                return ctypes.CDLL(candidate, use_errno=True)
            except OSError:
                continue
    raise CaptureError(f"cannot load {soname} (install the Debian package providing it)")


def declare(lib: ctypes.CDLL, name: str, restype: Any, *argtypes: Any) -> CFunction:
    try:
        f = getattr(lib, name)
    except AttributeError:
        raise CaptureError(f"{lib._name} has no {name}") from None
    f.restype = restype
    f.argtypes = argtypes
    return f  # type: ignore[no-any-return]


class Libs:
    """The few entry points we use, with their C signatures (ctypes would otherwise truncate pointers)."""

    def __init__(self) -> None:
        vp, i, u, ul = ctypes.c_void_p, ctypes.c_int, ctypes.c_uint, ctypes.c_ulong
        pi = ctypes.POINTER(ctypes.c_int)
        x11 = load_library("X11", "libX11.so.6")
        xext = load_library("Xext", "libXext.so.6")
        xdamage = load_library("Xdamage", "libXdamage.so.1")
        xfixes = load_library("Xfixes", "libXfixes.so.3")
        libc = load_library("c", "libc.so.6")
        self.XInitThreads = declare(x11, "XInitThreads", i)
        self.XOpenDisplay = declare(x11, "XOpenDisplay", vp, ctypes.c_char_p)
        self.XCloseDisplay = declare(x11, "XCloseDisplay", i, vp)
        self.XSetErrorHandler = declare(x11, "XSetErrorHandler", vp, ErrorHandler)
        self.XSetIOErrorHandler = declare(x11, "XSetIOErrorHandler", vp, IOErrorHandler)
        # libX11 >= 1.7 only. Without it a lost connection can only end in exit(): refuse to run.
        self.XSetIOErrorExitHandler = declare(x11, "XSetIOErrorExitHandler", None, vp, IOErrorExitHandler, vp)
        self.XGetErrorText = declare(x11, "XGetErrorText", i, vp, i, ctypes.c_char_p, i)
        self.XConnectionNumber = declare(x11, "XConnectionNumber", i, vp)
        self.XDefaultScreen = declare(x11, "XDefaultScreen", i, vp)
        self.XRootWindow = declare(x11, "XRootWindow", ul, vp, i)
        self.XDisplayWidth = declare(x11, "XDisplayWidth", i, vp, i)
        self.XDisplayHeight = declare(x11, "XDisplayHeight", i, vp, i)
        self.XDefaultDepth = declare(x11, "XDefaultDepth", i, vp, i)
        self.XDefaultVisual = declare(x11, "XDefaultVisual", vp, vp, i)
        self.XSync = declare(x11, "XSync", i, vp, i)
        self.XPending = declare(x11, "XPending", i, vp)
        self.XNextEvent = declare(x11, "XNextEvent", i, vp, ctypes.POINTER(XEvent))
        self.XFree = declare(x11, "XFree", i, vp)
        self.XDestroyImage = declare(x11, "XDestroyImage", i, ctypes.POINTER(XImage))
        shm_info = ctypes.POINTER(XShmSegmentInfo)
        self.XShmQueryExtension = declare(xext, "XShmQueryExtension", i, vp)
        self.XShmCreateImage = declare(
            xext, "XShmCreateImage", ctypes.POINTER(XImage), vp, vp, u, i, vp, shm_info, u, u
        )
        self.XShmAttach = declare(xext, "XShmAttach", i, vp, shm_info)
        self.XShmDetach = declare(xext, "XShmDetach", i, vp, shm_info)
        self.XShmGetImage = declare(xext, "XShmGetImage", i, vp, ul, ctypes.POINTER(XImage), i, i, ul)
        self.XDamageQueryExtension = declare(xdamage, "XDamageQueryExtension", i, vp, pi, pi)
        self.XDamageQueryVersion = declare(xdamage, "XDamageQueryVersion", i, vp, pi, pi)
        self.XDamageCreate = declare(xdamage, "XDamageCreate", ul, vp, ul, i)
        self.XDamageSubtract = declare(xdamage, "XDamageSubtract", None, vp, ul, ul, ul)
        self.XDamageDestroy = declare(xdamage, "XDamageDestroy", None, vp, ul)
        self.XFixesQueryExtension = declare(xfixes, "XFixesQueryExtension", i, vp, pi, pi)
        self.XFixesQueryVersion = declare(xfixes, "XFixesQueryVersion", i, vp, pi, pi)
        self.XFixesCreateRegion = declare(xfixes, "XFixesCreateRegion", ul, vp, vp, i)
        self.XFixesDestroyRegion = declare(xfixes, "XFixesDestroyRegion", None, vp, ul)
        self.XFixesFetchRegion = declare(xfixes, "XFixesFetchRegion", ctypes.POINTER(XRectangle), vp, ul, pi)
        self.shmget = declare(libc, "shmget", i, i, ctypes.c_size_t, i)
        self.shmat = declare(libc, "shmat", vp, i, vp, i)
        self.shmdt = declare(libc, "shmdt", i, vp)
        self.shmctl = declare(libc, "shmctl", i, i, i, vp)

