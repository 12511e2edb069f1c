"""The refresh rate a frame's display runs at: the stream's while nobody gives input, a faster one while someone does.

Chromium draws at its display's refresh rate, so a page's answer to a click waits for the next of its frames: on
the 30 Hz mode that keeps an animation to what the stream sends (docs/architecture.md, "Draw only what is
sent"), 17 ms on average and up to 33. Measured at 1280x800 dpr 2, a click to its decoded picture took 39 ms p50
at 30 Hz and 28 ms at 60 (docs/architecture.md, "Answer input at 60 Hz"). So the display runs at
`input_hz` from the first input until `hold_s` after the last one: a person typing or an agent stepping gets
answers a frame sooner, and an animation nobody touches still costs Chromium only the frames that are sent.

Pure: a function of the times it is told. The edge (frames/refresh.py) switches the mode.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

INPUT_HOLD_S = 2.0  # longer than a person's pause between clicks or keys, short next to an animation left running


@dataclass(slots=True)
class RefreshPolicy:
    idle_hz: int  # the stream's rate (settings.fps): what Chromium draws at when nobody gives input
    input_hz: int  # while someone does; not above idle_hz: the display never changes
    hold_s: float = INPUT_HOLD_S
    _last_input: float = field(default=-math.inf, init=False)

    @property
    def switches(self) -> bool:
        """Whether input changes the rate at all."""
        return self.input_hz > self.idle_hz

    def note_input(self, now: float) -> None:
        self._last_input = max(self._last_input, now)

    def wanted(self, now: float) -> int:
        """The rate the display should run at `now` (monotonic seconds)."""
        if self.switches and now - self._last_input < self.hold_s:
            return self.input_hz
        return self.idle_hz

    def next_change(self, now: float) -> float | None:
        """Seconds from `now` until `wanted` changes without further input; None when it never will."""
        if self.wanted(now) == self.idle_hz:
            return None
        return max(0.0, self._last_input + self.hold_s - now)
