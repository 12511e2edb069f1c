"""One XShm image: a BGRX picture in a SysV shared-memory segment that the X server writes into.

The segment is marked IPC_RMID as soon as the server has attached it, so it cannot outlive the process even
after SIGKILL. The numpy view handed out keeps the mapping alive: it is detached when the last view is dropped,
never under a caller's feet.
"""

from __future__ import annotations

import ctypes
import os
import weakref
from typing import Any

import numpy as np
import numpy.typing as npt

from framestream.core.errors import CaptureError
from framestream.media import xerrors
from framestream.media.xlib import (
    ALL_PLANES,
    IPC_CREAT,
    IPC_PRIVATE,
    IPC_RMID,
    LSB_FIRST,
    ZPIXMAP,
    Libs,
    XShmSegmentInfo,
)

Picture = npt.NDArray[np.uint8]


def _shmdt(libs: Libs, addr: int) -> None:
    libs.shmdt(addr)


class ShmImage:
    """The top-left width x height of a screen, read through XShmGetImage into memory shared with the server.

    Not thread-safe: its owner (`DisplayCapture`) serialises calls. Created empty so that the owner holds it
    before `open` can fail half-way: `detach` (while the connection lives) and `release` undo any part.
    """

    def __init__(self, libs: Libs, name: str) -> None:
        self._libs = libs
        self._name = name  # the display's, for errors
        self._info = XShmSegmentInfo(shmid=-1)
        self._image: Any = None  # POINTER(XImage)
        self._attached = False
        self._buffer: Any = None  # ctypes array over the segment; views of it keep it (and the mapping) alive
        self._picture: Picture | None = None

    def open(self, dpy: int, screen: int, depth: int, width: int, height: int) -> None:
        """Create the image and its segment and have the server attach it; CaptureError if that fails."""
        libs, name = self._libs, self._name
        image = libs.XShmCreateImage(
            dpy, libs.XDefaultVisual(dpy, screen), depth, ZPIXMAP, None, ctypes.byref(self._info), width, height
        )
        if not image:
            raise CaptureError(f"XShmCreateImage failed on {name}")
        self._image = image
        img = image.contents
        masks = (img.red_mask, img.green_mask, img.blue_mask)
        if img.bits_per_pixel != 32 or img.byte_order != LSB_FIRST or masks != (0xFF0000, 0xFF00, 0xFF):
            raise CaptureError(
                f"X display {name} pixel format is not BGRX: {img.bits_per_pixel} bpp, byte order "
                f"{img.byte_order}, masks {tuple(hex(m) for m in masks)}"
            )
        stride = img.bytes_per_line
        size = stride * height
        self._attach(dpy, size)
        img.data = self._info.shmaddr
        addr = int(self._info.shmaddr)
        buffer = (ctypes.c_ubyte * size).from_address(addr)
        # Detach when the last view dies, not at close(): a view still held by a caller must never point at
        # unmapped memory (that would be a segfault, not an exception).
        weakref.finalize(buffer, _shmdt, libs, addr)
        self._buffer = buffer
        self._picture = np.ndarray((height, width, 4), np.uint8, buffer, 0, (stride, 4, 1))

    def _attach(self, dpy: int, size: int) -> None:
        libs, info = self._libs, self._info
        shmid = libs.shmget(IPC_PRIVATE, size, IPC_CREAT | 0o600)
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
            libs.shmctl(shmid, IPC_RMID, None)
        xerrors.raise_if_failed(libs, dpy, "attaching the shared memory (is the X server in another IPC namespace?)")

    @property
    def picture(self) -> Picture:
        """The (height, width, 4) BGRX view of the segment: every read overwrites it in place."""
        assert self._picture is not None
        return self._picture

    def read_rows(self, dpy: int, window: int, y0: int, y1: int) -> None:
        """Read rows [y0, y1) of `window` into the same rows of the picture."""
        img = self._image.contents
        full_height, base = img.height, img.data
        # XShmGetImage writes at (image.data - shmaddr) with the image's stride: a full-width header moved
        # to row y0 lands the band exactly where a full grab would put it.
        img.height, img.data = y1 - y0, base + y0 * img.bytes_per_line
        try:
            ok = self._libs.XShmGetImage(dpy, window, self._image, 0, y0, ALL_PLANES)
        finally:
            img.height, img.data = full_height, base
        if not ok or xerrors.is_lost(dpy):
            xerrors.raise_if_failed(self._libs, dpy, "grabbing")
            raise CaptureError(f"XShmGetImage failed on {self._name}")

    def detach(self, dpy: int) -> None:
        """Ask the server to let go of the segment (courtesy: it does so itself when the connection closes)."""
        if self._attached:
            self._libs.XShmDetach(dpy, ctypes.byref(self._info))

    def release(self) -> None:
        """Free the client side; the mapping goes now, or when the caller's last view is dropped."""
        if self._image:
            self._image.contents.data = None  # the segment is not malloc'ed: never let Xlib free() it
            self._libs.XDestroyImage(self._image)
            self._image = None
        if self._buffer is None and self._info.shmaddr:
            self._libs.shmdt(self._info.shmaddr)  # attached, but failed before the view was built
        self._picture = None
        self._buffer = None
