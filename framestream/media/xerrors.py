"""Process-wide Xlib error handling, so a failing or dying X server becomes `CaptureError`, never exit().

Xlib's default handlers call exit() on any protocol or I/O error, and the handlers are process-global. Ours
only act for displays registered here (`register`) and pass anything else to whatever was installed before, so
other Xlib users keep their semantics. Each registered display also gets an I/O-error *exit* handler
(libX11 >= 1.7), which is what lets a lost connection return instead of exiting.

Callbacks run in the worker thread that made the failing Xlib call (ctypes takes the GIL for them); set and
dict operations are atomic under the GIL, so the registries need no lock of their own.
"""

from __future__ import annotations

import ctypes
import logging
import threading
from typing import Any

from framestream.core.errors import CaptureError
from framestream.media.xlib import ErrorHandler, IOErrorExitHandler, IOErrorHandler, Libs

log = logging.getLogger(__name__)

_owned: dict[int, str] = {}  # Display* -> display name, for the displays registered here
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
_error_cb = ErrorHandler(_on_error)
_io_error_cb = IOErrorHandler(_on_io_error)
_io_exit_cb = IOErrorExitHandler(_on_io_exit)


class _Process:
    """Once-per-process state: the loaded libraries and the handlers ours replaced."""

    lock = threading.Lock()
    libs: Libs | None = None
    prev_error: Any = None
    prev_io_error: Any = None


def setup() -> Libs:
    """Load the libraries, XInitThreads() and install the handlers, once per process."""
    with _Process.lock:
        if _Process.libs is None:
            libs = Libs()
            # Every frame's worker thread drives its own Display; Xlib's global state (handlers, the
            # extension registries) still needs its locks. libX11 >= 1.8 calls this itself; older ones need it
            # before any other Xlib call, hence here, first.
            libs.XInitThreads()
            prev = libs.XSetErrorHandler(_error_cb)
            _Process.prev_error = ErrorHandler(prev) if prev else None
            prev = libs.XSetIOErrorHandler(_io_error_cb)
            _Process.prev_io_error = IOErrorHandler(prev) if prev else None
            _Process.libs = libs
        return _Process.libs


def register(libs: Libs, dpy: int, name: str) -> None:
    """Handle errors on a display just opened: record them for `raise_if_failed` instead of exiting."""
    _lost.discard(dpy)  # the address may belong to an earlier, closed display
    _errors.pop(dpy, None)
    _owned[dpy] = name
    libs.XSetIOErrorExitHandler(dpy, _io_exit_cb, None)


def unregister(dpy: int) -> None:
    """Forget a display after XCloseDisplay (its address may be reused by the next one)."""
    _owned.pop(dpy, None)
    _lost.discard(dpy)
    _errors.pop(dpy, None)


def is_lost(dpy: int) -> bool:
    """Whether the display's connection hit an I/O error: every later call on it is a no-op."""
    return dpy in _lost


def raise_if_failed(libs: Libs, dpy: int, doing: str) -> None:
    """Raise CaptureError if the connection was lost or the server reported an error since the last check."""
    name = _owned.get(dpy, "?")
    if dpy in _lost:
        raise CaptureError(f"lost the connection to X display {name} while {doing}")
    err = _errors.pop(dpy, None)
    if err is not None:
        code, request, minor = err
        text = ctypes.create_string_buffer(256)
        libs.XGetErrorText(dpy, code, text, len(text))
        raise CaptureError(
            f"X error on {name} while {doing}: {text.value.decode(errors='replace')} (request {request}.{minor})"
        )
