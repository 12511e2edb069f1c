"""The C heap (glibc's malloc) the encoder's and the capture's buffers live in: two calls, no media imports.

Kept apart from the media stack so the service can set its allocator up at start while numpy, PyAV and OpenCV
still load only with the first frame (an idle service stays small).
"""

from __future__ import annotations

import ctypes

_M_MMAP_THRESHOLD = -3  # mallopt's parameter number (glibc malloc.h)


def map_large_blocks(threshold: int = 4 << 20) -> None:
    """Give blocks of `threshold` bytes and more mappings of their own, unmapped when freed (glibc only; call
    once, before frames start). glibc otherwise raises its mmap threshold after the first large free, so x264's
    frame buffers (about 6 MB each at 2560x1600) come from the worker thread's arena and, freed, end in its top,
    which `malloc_trim` leaves alone in a thread's arena: measured, each released frame kept 12-20 MB. Smaller
    blocks (a picture's temporaries) still come from the heap and are reused."""
    try:
        ctypes.CDLL(None).mallopt(_M_MMAP_THRESHOLD, threshold)
    except (OSError, AttributeError):  # not glibc: its allocator decides
        pass


def give_back_freed_memory() -> None:
    """Return freed heap pages to the system. glibc keeps them otherwise: after a large block is freed it raises
    its mmap threshold, so the next encoder's buffers come from the heap, whose free pages stay resident."""
    try:
        ctypes.CDLL(None).malloc_trim(0)
    except (OSError, AttributeError):  # not glibc: its allocator decides
        pass
