"""A worker thread's wake-up: one byte on a pipe that its `select` watches beside the X connection.

The event loop asks things of a frame's worker (media/pipeline.py) by setting a flag under a lock and waking it,
so the worker's `select` returns at once instead of at its next deadline.
"""

from __future__ import annotations

import os
import select


class WakePipe:
    def __init__(self) -> None:
        self._read, self._write = os.pipe()
        os.set_blocking(self._write, False)

    def fileno(self) -> int:
        """The end to `select` on."""
        return self._read

    def wake(self) -> None:
        """From any thread: the next (or current) wait returns."""
        try:
            os.write(self._write, b"\0")
        except OSError:
            pass  # the pipe is full (already awake: BlockingIOError) or closed (stopping)

    def drain(self) -> None:
        """Take the wake-ups that came (the worker, after its `select` said so)."""
        try:
            os.read(self._read, 4096)
        except OSError:
            pass

    def wait(self) -> None:
        """Block until woken."""
        select.select([self._read], [], [])
        self.drain()

    def close(self) -> None:
        for fd in (self._read, self._write):
            try:
                os.close(fd)
            except OSError:
                pass


__all__ = ["WakePipe"]
