"""When a frame's worker grabs and encodes: the pure policy, with time passed in.

The worker wakes on X damage, keyframe requests and deadlines; it asks `decide(now)` what to do and reports
back what happened. The rules:
- at most `fps` encodes a second; damage inside the interval waits for the next slot (it accumulates);
- an IDR only on demand, and beyond the first at most one per `keyframe_interval` (requests are coalesced);
- when the picture has been still for `refine_after`, `refine_frames` higher-quality pictures make it sharp;
  an IDR of a still picture is encoded at that higher quality at once.

`PatchRule` decides whether a change goes out as lossless patches instead of an H.264 picture (docs/performance.md,
"Patches", for the measurements behind its numbers). `BlockRule` decides how large damage is compared for H.264.
"""

from __future__ import annotations

import collections
import math
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Encode:
    """Grab (when `grab`) and encode one picture."""

    keyframe: bool
    refinement: bool
    grab: bool


@dataclass(frozen=True, slots=True)
class Wait:
    """Nothing to do until `seconds` from now (math.inf: until an event)."""

    seconds: float


Decision = Encode | Wait


# While the frame is recorded, what went out only as patches reaches its H.264 stream this soon after the first of
# them (framestream/recording): the picture then shows what changed since.
PATCH_FLUSH_S = 0.4
PATCH_FLUSH_EVERY_S = 0.95
PATCH_QUIET_S = 0.25  # a patch this long after the last flush follows a quiet spell (an animation's come sooner)


def patch_flush_at(now: float, flushed_at: float) -> float:
    """When the H.264 picture of what went out only as patches is made for the recording, the first of them having
    come `now` and the last such picture `flushed_at`: `PATCH_FLUSH_S` after it; while patches keep coming (this
    one within `PATCH_QUIET_S` of the last flush: an animation) at most one a `PATCH_FLUSH_EVERY_S`, so a running
    animation costs one picture a second. A change after a quiet spell is not held to that: held so, letters an
    agent typed 0.7 s after a click were not yet in the recording 0.5 s after their step (seen in CI)."""
    if now - flushed_at >= PATCH_QUIET_S:
        return now + PATCH_FLUSH_S
    return max(now + PATCH_FLUSH_S, flushed_at + PATCH_FLUSH_EVERY_S)


class EncodePolicy:
    def __init__(
        self,
        *,
        fps: float = 30.0,
        keyframe_interval: float = 1.0,
        refine_after: float = 0.12,
        refine_frames: int = 2,
    ) -> None:
        self.frame_interval = 1.0 / fps
        self.keyframe_interval = keyframe_interval
        self.refine_after = refine_after
        self.refine_frames = refine_frames
        self._dirty = True  # the first picture is always encoded
        self._keyframe_wanted = True
        self._last_encode_at = -math.inf
        self._last_keyframe_at = -math.inf
        self._last_change_at = -math.inf
        self._refine_left = 0
        self._quick_keyframe = False  # the wanted IDR is an at-once one: ordinary quality, refined after

    def note_damage(self) -> None:
        self._dirty = True

    def request_keyframe(self, *, at_once: bool = False) -> None:
        """Ask for an IDR; `at_once` skips the one-a-second budget (a resume, a page just loaded: nobody has a
        picture of it yet, so the next slot is when the first viewer can see it) and is encoded at the ordinary
        quality even for a still page, the refinements following: a sharp IDR of a whole 2560x1600 page costs
        several times the encode, and the viewer waits for it."""
        self._keyframe_wanted = True
        if at_once:
            self._last_keyframe_at = -math.inf
            self._quick_keyframe = True

    @property
    def keyframe_pending(self) -> bool:
        return self._keyframe_wanted

    @property
    def next_slot(self) -> float:
        """The earliest time `decide` may return `Encode`, whatever is damaged or asked for until then."""
        return self._last_encode_at + self.frame_interval

    def decide(self, now: float) -> Decision:
        waits: list[float] = []
        slot_at = self.next_slot
        if self._keyframe_wanted:
            due = max(slot_at, self._last_keyframe_at + self.keyframe_interval)
            if now >= due:
                still = not (self._dirty or self._quick_keyframe) and now - self._last_change_at >= self.refine_after
                return Encode(keyframe=True, refinement=still, grab=True)
            waits.append(due - now)
        if self._dirty:
            if now >= slot_at:
                return Encode(keyframe=False, refinement=False, grab=True)
            waits.append(slot_at - now)
        elif self._refine_left > 0:
            due = max(slot_at, self._last_change_at + self.refine_after)
            if now >= due:
                return Encode(keyframe=False, refinement=True, grab=False)
            waits.append(due - now)
        return Wait(min(waits) if waits else math.inf)

    def note_encoded(self, now: float, decision: Encode, *, changed: bool, patched: bool = False) -> None:
        """Report what the worker did with `decision`; `changed` is False when the grab equalled the last picture
        (then nothing was encoded unless a keyframe was asked for). `patched`: the change went out as lossless
        patches, which need no sharpening (a refinement still owed for earlier motion waits for stillness)."""
        if decision.grab:
            self._dirty = False
        if changed:
            self._last_change_at = now
            if not patched:
                self._refine_left = self.refine_frames
        produced = changed or decision.keyframe or decision.refinement
        if not produced:
            return
        self._last_encode_at = now
        if decision.keyframe:
            self._keyframe_wanted = False
            self._last_keyframe_at = now
            if decision.refinement:
                self._refine_left = 0
            elif self._quick_keyframe:
                self._refine_left = self.refine_frames  # made sharp next, as after motion
            self._quick_keyframe = False
        elif decision.refinement:
            self._refine_left -= 1


class PatchRule:
    """Small changes as patches, the rest (and costly regions that keep changing) as H.264.

    Measured at 2560x1600 on two cores (docs/performance.md): x264 costs 10-18 ms per picture however little
    changed, while a PNG of UI content costs about 15 ns a pixel (1 ms for 256x256) and of photographic content
    up to 100 ns a pixel at ~3 bytes a pixel. So a change goes out as patches when its changed boxes cover at
    most `max_area` pixels in at most `max_rects` boxes; when their images come out larger than `max_bytes`,
    or patches have taken more than `max_rate` bytes over the last second (a video or a large animation
    keeps changing with costly content), changes go through H.264 for `hold` seconds, which keeps bytes bounded.

    An animation that runs on (a spinner, a box moving back and forth: a change in every picture for
    `animation_after` seconds, each near the one before) is sent at most `animation_fps` pictures a second: a
    picture of it in between waits for the next (its boxes go out with the next patch, or when it stops with the
    policy's sharpening 0.12 s later, as a patch: media/sender.py). Measured at 2560x1600 (docs/performance.md): a
    spinner's PNG is about 3.5x its H.264 P-frame, so at 30 patch pictures a second it sends 3.6x today's bytes;
    at 15, about 1.9x, for a third less CPU. Content that moves fast (a box crossing the page: some box of the
    change moved at least `animation_fast_pps` CSS pixels a second from its like in the change before, 12 a
    picture; the picture's pixels are `dpr` times those) goes at the picture rate: at 15 a second its jumps show,
    and its H.264 pictures cost about as many bytes (issue 29's moving box, 18 CSS pixels a picture: 300-400
    kbit/s as H.264, 400-420 as patches at dpr 2); a slower one (the small animation, at most 8) keeps the
    animation's rate. A change elsewhere (a typed letter, a click's
    effect) and the first `animation_after` seconds of any change still go at the picture rate.
    `animation_fps=None` sends every picture.
    """

    def __init__(
        self,
        *,
        max_area: int = 128 * 1024,
        max_rects: int = 16,
        max_bytes: int = 96 * 1024,
        max_rate: int = 768 * 1024,
        hold: float = 1.0,
        animation_fps: float | None = 15.0,
        animation_after: float = 1.0,
        animation_fast_pps: float = 360.0,
        dpr: float = 1.0,
        scroll_share: float = 0.25,
        max_scroll_bytes: int = 256 * 1024,
        max_scroll_rate: int = 2048 * 1024,
    ) -> None:
        self.max_area = max_area
        self.max_rects = max_rects
        self.max_bytes = max_bytes
        self.max_rate = max_rate
        self.hold = hold
        self.animation_fps = animation_fps
        self.animation_after = animation_after
        self.animation_fast_pps = animation_fast_pps * dpr  # CSS pixels a second, in the picture's pixels
        self.scroll_share = scroll_share
        self.max_scroll_bytes = max_scroll_bytes
        self.max_scroll_rate = max_scroll_rate
        self._fast = False  # the running change moved fast lately: it goes at the picture rate
        self._fast_until = -math.inf
        self._streak_since = -math.inf  # the first change of the current run of changes
        self._last_change_at = -math.inf
        self._last_boxes: list[tuple[int, int, int, int]] = []
        self._last_patch_at = -math.inf
        self._video_until = -math.inf
        self._large_until = -math.inf  # a change too large for patches came lately: compare large damage by rows
        self._sent: collections.deque[tuple[float, int]] = collections.deque()
        self._sent_bytes = 0

    def allows(self, now: float, boxes: list[tuple[int, int, int, int]], *, tight: bool = True) -> bool:
        """Whether the changed boxes (x0, y0, x1, y1) of one picture may go out as patches. `tight`: the boxes hold
        only what changed (not whole rows of large damage), so too large means large changes."""
        if not boxes or len(boxes) > self.max_rects or now < self._video_until:
            return False
        if self.too_large(boxes):
            if tight:
                self._large_until = now + self.hold
            return False
        return True

    def too_large(self, boxes: list[tuple[int, int, int, int]]) -> bool:
        """Whether a change's boxes cover more than patches take (a scroll may still go, as a copy)."""
        return _area(boxes) > self.max_area

    def allows_scroll(self, now: float, rest: list[tuple[int, int, int, int]], picture_area: int) -> bool:
        """Whether a scroll may go out as a copy with images of the `rest` of the change (boxes x0, y0, x1, y1;
        none at all is fine): while patches are not held, the rest at most `scroll_share` of the picture. More
        than a change's `max_area`: as H.264 a scroll is no cheap picture either (x264 finds no shift beyond its
        16-pixel search, measured at 2560x1600 on a text page: a wheel notch of 53 CSS pixels 170 KB and 14-30 ms,
        then a 150 KB refinement; its 106-row strip as a PNG at most 85 KB and 6 ms, exact at once). The copy
        costs the viewer a move of what it shows, not bytes; a scroll's damage is compared by rows for `hold`
        seconds after (its copy is compared exactly anyway)."""
        limit = max(self.max_area, int(self.scroll_share * picture_area))
        if now < self._video_until or len(rest) >= self.max_rects or _area(rest) > limit:
            return False
        self._large_until = now + self.hold
        return True

    def compares_tightly(self, now: float) -> bool:
        """Whether large X damage is worth comparing pixel by pixel (1-3 ms at 2560x1600) for boxes tight enough
        to go out as patches: not while changes go through H.264 anyway (`hold` seconds after one too costly or
        too large), so a scroll pays it about once a second."""
        return now >= self._video_until and now >= self._large_until

    def note_sent(self, now: float, size: int, *, scroll: bool = False) -> bool:
        """Patches of `size` bytes were made; False (and video for `hold` s) when they cost too much to send. A
        scroll's images (`scroll`) have larger limits, `max_scroll_bytes` and `max_scroll_rate` (see
        `allows_scroll`)."""
        while self._sent and self._sent[0][0] <= now - 1.0:
            self._sent_bytes -= self._sent.popleft()[1]
        most, rate = (self.max_scroll_bytes, self.max_scroll_rate) if scroll else (self.max_bytes, self.max_rate)
        if size > most or self._sent_bytes + size > rate:
            self._video_until = now + self.hold
            return False
        self._sent.append((now, size))
        self._sent_bytes += size
        return True

    def waits(self, now: float, boxes: list[tuple[int, int, int, int]]) -> bool:
        """Whether the patches of this change (its boxes x0, y0, x1, y1) wait for the next animation slot. Call it
        once for every change that could go out as patches, and `note_patch` when patches went out."""
        running = now - self._last_change_at <= _STREAK_GAP_S
        if not running:
            self._streak_since = now
        previous, elapsed = self._last_boxes, now - self._last_change_at
        self._last_boxes, self._last_change_at = boxes, now
        # Pixels a second, not a picture: a waiting animation's damage is grabbed every other picture. Fast for a
        # while after: a box turning back, or a picture Chromium drew late, moves less than its speed.
        if running and _moved(boxes, previous) >= self.animation_fast_pps * max(elapsed, 1 / 60):
            self._fast_until = now + _FAST_HOLD_S
        self._fast = now < self._fast_until
        if self.animation_fps is None or not running or now - self._streak_since < self.animation_after:
            return False
        if self._fast:
            return False  # content crossing the page: at the picture rate
        if not all(_near(box, previous) for box in boxes):
            return False  # something new (a letter typed beside a spinner): at once
        return now - self._last_patch_at < 1.0 / self.animation_fps - _SLOT_SLACK_S

    def note_patch(self, now: float) -> None:
        self._last_patch_at = now

    def grab_after(self, now: float, damage: list[tuple[int, int, int, int]]) -> float:
        """Seconds the grab of X's `damage` boxes (x0, y0, x1, y1) can wait, 0 for none: when it is the running
        animation's own (near its last boxes) and that animation's next slot has not come, `waits` would hold
        its picture back anyway, so grabbing and comparing it now is wasted work. Changes nothing."""
        if (self.animation_fps is None or not damage or now < self._video_until
                or now - self._last_change_at > _STREAK_GAP_S or now - self._streak_since < self.animation_after
                or self._fast
                or not all(_near(box, self._last_boxes) for box in damage)):
            return 0.0
        slot = self._last_patch_at + 1.0 / self.animation_fps - _SLOT_SLACK_S
        if now >= slot:
            return 0.0
        # Until the animation's next damage (pictures come at 30 fps: the first at or after the slot goes); one
        # period past the slot when none comes (it stopped: what changed still goes out). Waking at the slot itself
        # would grab between the page's pictures and send 19 a second.
        return slot + 1.0 / self.animation_fps - now


# A run of changes goes on while pictures change at least this often (30 fps with a late picture or two).
class BlockRule:
    """Whether a grab compares damage by macroblocks (media/changes.py) rather than scanning its rows from their
    ends: it costs more (0.6 against 0.4 ms for 2560x848 rows at dpr 2) and pays when the changed blocks are a
    small part of the damage (a box under a counter: conversion and the search for motion then take only them).
    After a comparison of large damage whose boxes covered more than `share` of it (a scroll, a video), the next
    `retry - 1` grabs scan rows; one in `retry` looks again."""

    def __init__(self, retry: int = 16, share: float = 0.5) -> None:
        self.retry = retry
        self.share = share
        self._skip = 0

    def wanted(self) -> bool:
        """Whether this grab compares by blocks; call it once a grab."""
        if self._skip:
            self._skip -= 1
            return False
        return True

    def note(self, share: float) -> None:
        """The share of the damage that a comparison by blocks found changed."""
        if share > self.share:
            self._skip = self.retry - 1


_STREAK_GAP_S = 0.1
# An animation picture goes out when at least its slot minus this has passed (pictures come at 30 fps slots).
_SLOT_SLACK_S = 0.015
_FAST_HOLD_S = 0.5  # content stays fast this long after it last moved fast
_NEAR_PX = 32  # how far a box of an animation may be from one of the picture before (a moving box's edges)


def _area(boxes: list[tuple[int, int, int, int]]) -> int:
    return sum((x1 - x0) * (y1 - y0) for x0, y0, x1, y1 in boxes)


_LIKE_PX = 8  # how much a box may grow or shrink and still be the same thing moved (a box's edge, a digit)


def _moved(boxes: list[tuple[int, int, int, int]], previous: list[tuple[int, int, int, int]]) -> int:
    """How far a change moved since the change before: for each box the distance to the nearest box of about its
    size there (none: it does not count), the largest of those. A spinner or a counter changes in place (0-2
    pixels); a box crossing the page moves its two edges by its speed."""
    moved = 0
    for x0, y0, x1, y1 in boxes:
        like = [max(abs(x0 - a0), abs(y0 - b0)) for a0, b0, a1, b1 in previous
                if abs((x1 - x0) - (a1 - a0)) <= _LIKE_PX and abs((y1 - y0) - (b1 - b0)) <= _LIKE_PX]
        if like:
            moved = max(moved, min(like))
    return moved


def _near(box: tuple[int, int, int, int], others: list[tuple[int, int, int, int]]) -> bool:
    x0, y0, x1, y1 = box
    return any(x0 <= b1 + _NEAR_PX and a0 <= x1 + _NEAR_PX and y0 <= c1 + _NEAR_PX and c0 <= y1 + _NEAR_PX
               for a0, c0, b1, c1 in others)
