"""Each change of a frame as lossless patches or as one H.264 picture, and the encoder kept behind the patches.

The encoder's reference never sees a patch: a patched change stays pending (its boxes), and the next
H.264 picture, which is made whenever something else changes, a keyframe is asked for or a refinement is due,
first brings the encoder's picture up to date with every pending change. That picture then carries the whole
current picture, so it also covers whatever the patches showed, and every decoder stays exact.

A scroll (media/scroll.py) goes as one copy of what the viewer shows and images of the rest, when every viewer
takes copies: the copy reads the viewer's picture before the message, which is the picture before (each change
went out, or is pending in the encoder as a patch the viewer drew), so none is tried while an animation's picture
waits unsent.

A picture of a running animation may wait (core/pacing.py `PatchRule.waits`): `send` then returns None and keeps
its boxes, pending like a patch's; they go out with the next patch, or with the policy's sharpening 0.12 s after
the animation stops (it owes one for a change that sent nothing). A sharpening after patches alone is no H.264
picture (nothing lossy to sharpen): what waited goes out as a patch, or nothing at all.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from framestream.core.pacing import BlockRule, PatchRule
from framestream.core.wire import PatchRect, pack_patch_payload
from framestream.media.diff import changed_boxes
from framestream.media.encoder import H264Encoder
from framestream.media.patches import Box, PngCache, make_patches, merge_boxes
from framestream.media.picture import KIND_PATCH, KIND_VIDEO, PatchGate
from framestream.media.rects import DamageRect
from framestream.media.scroll import find_scroll

_WAITING = object()  # an animation's picture that waits for its next slot (PatchRule.waits)

# More boxes to convert than this are converted as their bounding box (one OpenCV call each otherwise).
_MAX_CONVERSIONS = 8
# The refinements the policy makes after a lossy picture (core/pacing.py EncodePolicy.refine_frames).
_REFINE_FRAMES = 2
# More pending boxes than this (patches sent since the last H.264 picture) are kept as their bounding box.
_MAX_PENDING_BOXES = 64


@dataclass(frozen=True, slots=True)
class Outgoing:
    data: bytes
    keyframe: bool
    refinement: bool
    kind: int  # KIND_VIDEO or KIND_PATCH
    patch_bytes: int = 0  # of images, for the statistics


class ChangeSender:
    """One capture's way out: owned by the frame's worker thread, like its encoder."""

    def __init__(self, encoder: H264Encoder, gate: PatchGate | None, rule: PatchRule | None = None) -> None:
        self._encoder = encoder
        self._gate = gate
        self.rule = rule or PatchRule()
        self.blocks = BlockRule()  # large damage compared by macroblocks while that pays (note its share)
        self._pending_boxes: list[Box] = []  # sent as patches, not in the encoder's picture yet
        self._images = PngCache()
        self._waiting: list[Box] = []  # an animation's boxes not sent yet (PatchRule.waits)
        self._patched_last = False  # the last message was patches (a waiting picture sends none)
        self._video_refines_owed = 0  # refinements the last lossy H.264 picture still needs

    @property
    def _patching(self) -> bool:
        """Whether patches may go out now (every viewer of the full stream takes them)."""
        return self._gate is not None and self._gate.open

    @property
    def _copying(self) -> bool:
        """Whether a scroll may go out as a copy (every viewer of the full stream takes copies too)."""
        return self._patching and self._gate is not None and self._gate.copies

    @property
    def codec(self) -> str | None:
        return self._encoder.codec_string

    @property
    def pending(self) -> bool:
        """Whether patches were sent that the encoder's picture does not have yet."""
        return bool(self._pending_boxes)

    def flush(self, kept: npt.NDArray[np.uint8]) -> Outgoing | None:
        """One sharp H.264 picture of what went out only as patches (a recording needs every change in the
        H.264 stream): only their boxes are encoded, at the still-picture quality."""
        if not self._pending_boxes:
            return None
        return self._video(kept, keyframe=False, refinement=True, rows=None, hint=[], partial=True)

    def compares_tightly(self, now: float) -> bool:
        """Whether this grab's large damage should be compared pixel by pixel: only when patches may be sent."""
        return self._patching and self.rule.compares_tightly(now)

    def compares_blocks(self) -> bool:
        """Whether this grab's damage should be compared by the encoder's macroblocks: when changes go out as H.264
        only, and while that pays (`BlockRule`)."""
        return not self._patching and self.blocks.wanted()

    def grab_after(self, now: float, damage: Sequence[Box]) -> float:
        """Seconds the grab of this damage can wait (`PatchRule.grab_after`); 0 unless patches are on."""
        if not self._patching:
            return 0.0
        return self.rule.grab_after(now, list(damage))

    def send(
        self,
        kept: npt.NDArray[np.uint8],
        *,
        now: float,
        keyframe: bool,
        refinement: bool,
        rows: tuple[int, int] | None,
        boxes: Sequence[Box],
        hint: list[tuple[int, int, int, int]] | None,
        tight: bool = True,
        previous: npt.NDArray[np.uint8] | None = None,
    ) -> Outgoing | None:
        """Send the current picture `kept` (BGRX). `rows` and `boxes` (x0, y0, x1, y1) say what changed since the
        last send (rows None: nothing); `hint` is what x264 may restrict its analysis to (None: everything);
        `tight`: the boxes hold only what changed (not whole rows of large damage); `previous`: the picture of the
        last send (a scroll is found against it). None when the encoder made no access unit."""
        if rows is not None and not (keyframe or refinement) and hint is not None:
            patch = self._patches(kept, now, boxes, tight=tight, previous=previous)
            if patch is _WAITING:
                return None
            if isinstance(patch, Outgoing):
                return patch
        if refinement and not keyframe and rows is None and self._patched_last and not self._video_refines_owed:
            # The policy's sharpening after patches only (a waiting animation picture asks for it, as a change
            # that sent nothing): no lossy picture to sharpen, so no H.264 picture; what waited goes as a patch.
            if not self._waiting:
                return None
            flushed = self._patches(kept, now, [], wait=False)
            if isinstance(flushed, Outgoing):
                return flushed
        return self._video(kept, keyframe=keyframe, refinement=refinement, rows=rows, hint=hint, boxes=boxes)

    def _patches(
        self, kept: npt.NDArray[np.uint8], now: float, boxes: Sequence[Box], *, wait: bool = True,
        tight: bool = True, previous: npt.NDArray[np.uint8] | None = None,
    ) -> Outgoing | object | None:
        """The change as patches; None when it must go as video; `_WAITING` when an animation's picture waits."""
        if not self._patching:
            return None
        merged = merge_boxes(boxes)
        waiting = self._waiting
        if previous is not None and not waiting and self._copying and self.rule.too_large(merged):
            scrolled = self._scrolled(previous, kept, now, merged)
            if scrolled is not None:
                return scrolled
        if not self.rule.allows(now, merge_boxes([*merged, *waiting]) if waiting else merged, tight=tight):
            return None
        if wait and self.rule.waits(now, merged):
            # Shown with the next patch, or by the next H.264 picture (pending rows) if none comes.
            self._waiting = merged if not waiting else merge_boxes([*merged, *waiting])
            self._pend(merged)
            return _WAITING
        if waiting:
            merged = merge_boxes([*merged, *waiting])
        rects = make_patches(kept, merged, self._images)
        size = sum(len(r.data) for r in rects)
        if not self.rule.note_sent(now, size):
            return None  # too costly to send as images: this change (and the next ones for a while) as video
        return self._patch_message(now, merged, rects, size)

    def _scrolled(self, previous: npt.NDArray[np.uint8], kept: npt.NDArray[np.uint8], now: float,
                  boxes: list[Box]) -> Outgoing | None:
        """The change as a copy of scrolled rows and images of the rest; None when it is no scroll, or the rest is
        too large for patches. The scroll is looked for in the bounding box of the change (two columns of text
        scrolled together are two boxes), then in its largest box (a list scrolled beside a still sidebar)."""
        largest = max(boxes, key=lambda b: (b[2] - b[0]) * (b[3] - b[1]))
        scroll, within = None, largest
        for within in dict.fromkeys([_bound(boxes), largest]):
            scroll = find_scroll(previous, kept, within)
            if scroll is not None:
                break
        if scroll is None:
            return None
        x0, y0, x1, y1 = within
        cx0, top, cx1, bottom = scroll.box
        # Where the viewer still shows the picture before: the box's rows the copy does not cover (the strip that
        # came into view, as whole rows: compared tightly, a line of text is dozens of boxes), its columns beside
        # the copy (a scrollbar), every other box. Strips and the rest are merged apart: merged together, a strip
        # and a scrollbar's thumb beside the copy would be their bounding box, the whole screen.
        strips = [DamageRect(x0, a, x1 - x0, b - a) for a, b in ((y0, top), (bottom, y1)) if b > a]
        sides = [DamageRect(a, top, b - a, bottom - top) for a, b in ((x0, cx0), (cx1, x1)) if b > a]
        others = [DamageRect(b[0], b[1], b[2] - b[0], b[3] - b[1]) for b in boxes
                  if not (x0 <= b[0] and y0 <= b[1] and b[2] <= x1 and b[3] <= y1)]
        rest = changed_boxes(previous, kept, strips, tight_area=0) + merge_boxes(
            changed_boxes(previous, kept, sides + others))
        if len(rest) >= self.rule.max_rects:
            rest = [_bound(rest)]
        if not self.rule.allows_scroll(now, rest, int(kept.shape[0]) * int(kept.shape[1])):
            return None
        images = make_patches(kept, rest, self._images)
        size = sum(len(r.data) for r in images)
        if not self.rule.note_sent(now, size, scroll=True):
            return None
        copy = PatchRect.copy((cx0, top, cx1 - cx0, bottom - top), scroll.source)
        return self._patch_message(now, boxes, [copy, *images], size)

    def _patch_message(self, now: float, boxes: Sequence[Box], rects: list[PatchRect], size: int) -> Outgoing:
        """A patch message of `rects` goes out: what waited goes with it, and its `boxes` are pending until an
        H.264 picture carries them too."""
        self.rule.note_patch(now)
        self._waiting = []
        self._pend(boxes)
        self._patched_last = True
        return Outgoing(pack_patch_payload(rects), False, False, KIND_PATCH, size)

    def _pend(self, boxes: Sequence[Box]) -> None:
        pending = self._pending_boxes
        pending.extend(boxes)
        if len(pending) > _MAX_PENDING_BOXES:  # a long animation as patches: its bounds, not every picture's boxes
            pending[:] = [_bound(pending)]

    def _video(
        self,
        kept: npt.NDArray[np.uint8],
        *,
        keyframe: bool,
        refinement: bool,
        rows: tuple[int, int] | None,
        hint: list[tuple[int, int, int, int]] | None,
        boxes: Sequence[Box] = (),
        partial: bool = False,
    ) -> Outgoing | None:
        encoder = self._encoder
        # Each box's own rows and columns (every changed pixel lies in one: media/diff.py, and the patches' boxes
        # pended); many of them as their bounding box, one conversion instead of many small ones.
        spans = list(self._pending_boxes)
        if rows is not None:
            spans += boxes or [(0, rows[0], kept.shape[1], rows[1])]  # rows alone: whole rows
        if len(spans) > _MAX_CONVERSIONS:
            spans = [_bound(spans)]
        for x0, y0, x1, y1 in spans:
            encoder.update(kept, (y0, y1), (x0, x1))
        changed = hint
        if changed is not None:
            changed = changed + [(x0, y0, x1 - x0, y1 - y0) for x0, y0, x1, y1 in self._pending_boxes]
        self._pending_boxes.clear()
        self._waiting = []  # this picture shows them
        # Nothing grabbed changed (`rows` None, nothing pended): nothing differs from the last picture. Saying so
        # lets a refinement after pictures of copies be one of them; "anything may have changed" made it an IDR.
        encoded = encoder.encode(
            keyframe=keyframe, refinement=refinement, changed=changed if rows is not None or spans else [],
            partial=partial,
        )
        if not encoded.data:
            return None
        self._patched_last = False
        # A picture at the normal quality is sharpened by the policy's next refinements; each refinement is one of
        # them, and a still keyframe (made at the refinement's quality) needs none.
        if not refinement:
            self._video_refines_owed = _REFINE_FRAMES
        else:
            self._video_refines_owed = 0 if keyframe else max(0, self._video_refines_owed - 1)
        return Outgoing(encoded.data, encoded.keyframe, encoded.refinement, KIND_VIDEO)


def _bound(boxes: Sequence[Box]) -> Box:
    """The bounding box of `boxes` (x0, y0, x1, y1)."""
    return (min(b[0] for b in boxes), min(b[1] for b in boxes), max(b[2] for b in boxes), max(b[3] for b in boxes))
