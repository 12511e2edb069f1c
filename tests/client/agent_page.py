"""tests/pages/agent.html's places and colours (CSS pixels), shared by the client and MCP tests."""

from __future__ import annotations

import numpy as np

BUTTON = (140, 100)
FIELD = (240, 220)
GREY = (128, 128, 128)
RED = (220, 30, 30)
WHITE = (255, 255, 255)
MARKS = {(600, 30): (30, 60, 220), (600, 366): (240, 200, 0), (40, 366): (30, 180, 60)}
STRIP_Y = 396


def near(pixel: tuple[int, int, int] | np.ndarray, rgb: tuple[int, int, int], tol: int = 24) -> bool:
    return all(abs(int(a) - b) <= tol for a, b in zip(pixel, rgb, strict=True))


def typed_text(rgb: np.ndarray) -> str:
    """The field's value from the strip of a lossless picture at dpr 1 (cell 0: length; then code points)."""

    def cell(i: int) -> int:
        r, g, b = (int(c) for c in rgb[STRIP_Y, i * 8 + 4])
        return (r << 16) | (g << 8) | b

    length = cell(0)
    if length > 79:
        return ""
    return "".join(chr(cell(i)) for i in range(1, length + 1))
