"""X authorization for the frames' displays: a random MIT-MAGIC-COOKIE-1 per display (issue 32, #3).

Without it any local user could connect to a frame's Xvfb (`import -window root` took a frame's screen). Each
display starts with `-auth` and a file (0600, in a 0700 directory of its own) holding one cookie that matches any
address and display number; its browser and xrandr get that file as XAUTHORITY. This process opens every display
itself (the capture, X input), so its own XAUTHORITY names one more file with each live display's cookie under
its number, rewritten atomically as displays come and go (libXau reads the file at every XOpenDisplay).

The file format is libXau's: family, address, display number, auth name and data, each a big-endian 16-bit
length (the family a plain 16-bit value) and its bytes.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import secrets
import shutil
import struct
import tempfile
import threading
from pathlib import Path

FAMILY_WILD = 0xFFFF  # matches any address
COOKIE_NAME = b"MIT-MAGIC-COOKIE-1"


def entry(cookie: bytes, number: int | None = None) -> bytes:
    """One Xauthority record for any address: for display `number`, or for any display (None)."""
    def field(value: bytes) -> bytes:
        return struct.pack(">H", len(value)) + value

    display = b"" if number is None else str(number).encode()
    return struct.pack(">H", FAMILY_WILD) + field(b"") + field(display) + field(COOKIE_NAME) + field(cookie)


def _write_private(path: Path, data: bytes) -> None:
    """Write `data` to `path` (0600) atomically: a reader sees the old file or the new one, never a part."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


class DisplayCookies:
    """The cookies of this process's displays. One per process (`cookies()`); thread-safe."""

    def __init__(self, directory: Path | None = None) -> None:
        self.directory = directory or Path(tempfile.mkdtemp(prefix="framestream-xauth-"))
        os.chmod(self.directory, 0o700)
        if directory is None:
            atexit.register(shutil.rmtree, self.directory, True)
        self.own_file = self.directory / "service.xauth"
        self._lock = threading.Lock()
        self._live: dict[int, bytes] = {}
        _write_private(self.own_file, b"")
        os.environ["XAUTHORITY"] = str(self.own_file)  # set once, before any display is opened here

    def new_file(self) -> tuple[Path, bytes]:
        """A fresh cookie for a display about to start, in a file of its own for `-auth` and its clients."""
        cookie = secrets.token_bytes(16)
        fd, name = tempfile.mkstemp(dir=self.directory, prefix="display-", suffix=".xauth")
        with os.fdopen(fd, "wb") as fh:
            fh.write(entry(cookie))
        return Path(name), cookie

    def started(self, number: int, cookie: bytes) -> None:
        """The display took `number`: this process may open it from now on."""
        with self._lock:
            self._live[number] = cookie
            self._rewrite()

    def ended(self, number: int | None, path: Path) -> None:
        with self._lock:
            if number is not None and self._live.get(number) is not None:
                del self._live[number]
                self._rewrite()
        with contextlib.suppress(FileNotFoundError):
            path.unlink()

    def _rewrite(self) -> None:
        _write_private(self.own_file, b"".join(entry(c, n) for n, c in sorted(self._live.items())))


_cookies: DisplayCookies | None = None
_cookies_lock = threading.Lock()


def cookies() -> DisplayCookies:
    global _cookies
    with _cookies_lock:
        if _cookies is None:
            _cookies = DisplayCookies()
        return _cookies

__all__ = ["COOKIE_NAME", "DisplayCookies", "cookies", "entry"]
