"""Fan-out: one frame's pictures to every viewer, without the producer ever waiting.

`FrameFeed.publish` runs on the event loop once per encoded picture: it numbers the picture (the sequence is
the frame's, shared by every viewer) and offers it to each `Viewer`. A viewer whose connection is behind (its
`Outbox` is over its time budget at the link's measured rate) drops the picture and every delta after it,
asks the frame for a keyframe once its queue has room and resumes only at one, so a stalled viewer costs the
others nothing. A viewer that had to skip on a measured link moves to the frame's light stream (`publish_light`:
the CSS size, capped to the slowest light viewer's link, its own numbering and `video-config`) until a probe shows
its link carries the full stream again (framestream/fanout/link.py `StreamChoice`, media/light.py).

A new watcher starts from the frame's last keyframe when that keyframe still shows the page: nothing changed
since (only refinements of it followed, which it gets too). It sees the picture at once, without waiting for a
fresh keyframe and without making every other viewer receive one. Once anything changed after it (a delta, a
patch) the kept keyframe is older than the page, and no viewer is ever shown that first: the joiner asks for a
fresh keyframe (docs/architecture.md, "Fresh pictures").

Below both the frames and the server: a frame owns its feed, a connection owns its outbox and its viewers.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from framestream.core.wire import FLAG_KEYFRAME, FLAG_REFINEMENT, VIDEO_HEADER, pack_padding, pack_video_header
from framestream.fanout.link import StreamChoice
from framestream.fanout.outbox import OUTBOX_MAX_BYTES, OUTBOX_MAX_PICTURES, Outbox
from framestream.media.light_policy import light_kbps, needs_recap
from framestream.media.picture import PatchGate, Picture

if TYPE_CHECKING:
    from framestream.frames.events import FrameEvent

log = logging.getLogger(__name__)

PADDING_CHUNK = 16 * 1024  # a probe's padding messages: small enough for a picture to go between them

__all__ = ["FrameFeed", "Outbox", "Viewer"]  # Outbox lives in framestream/fanout/outbox.py; importers use it from here

@dataclass(eq=False)
class Viewer:
    """One connection watching one frame, under its connection-local `slot`.

    Pictures go straight to its `outbox`; what happens to the frame (state, control) reaches it as events
    through `on_event`, which its connection turns into wire messages."""

    frame_id: str
    slot: int
    outbox: Outbox
    send_config: Callable[[Viewer], None]
    on_event: Callable[[FrameEvent], None]
    waiting_keyframe: bool = True
    configured: bool = False
    skipped: int = 0  # times it fell behind and skipped to a keyframe
    choice: StreamChoice = field(default_factory=StreamChoice)  # full stream, or the light one (a slow link)
    asked_keyframe: bool = True  # its frame asks for one when it is added
    patches: bool = False  # granted the `patches` feature: takes patch messages (kind 2) beside video
    copies: bool = False  # granted `copies` too: takes a patch message's copy rectangles (a scroll)
    light: bool = False  # on the frame's light stream (its link cannot carry the full one), not the full stream

    def offer(self, picture: Picture, sequence: int, request_keyframe: Callable[[bool], None]) -> bool:
        """Queue the picture for this viewer; False when it was dropped (skipping to a keyframe). Pictures of
        the stream this viewer does not take are no concern of it (True). `request_keyframe(light)` asks the
        frame for a keyframe of the full or the light stream."""
        if not picture.light:
            if picture.keyframe:
                self.choice.keyframe_bytes = len(picture.data)
            else:
                self.choice.deltas.add(len(picture.data))
        self.follow_link(request_keyframe)
        if picture.light != self.light:
            return True
        if self.waiting_keyframe and not picture.keyframe:
            self._ask_keyframe(request_keyframe)
            return False
        if picture.patch and not self.patches:
            # Made while this viewer was joining (the worker had not yet seen the gate close): the H.264 stream
            # alone lacks that change, so it resumes at a keyframe, as after any skip.
            self.waiting_keyframe = True
            self.asked_keyframe = False
            self._ask_keyframe(request_keyframe)
            return False
        if picture.keyframe and not self.configured:
            self.send_config(self)
            self.configured = True
        flags = (FLAG_KEYFRAME if picture.keyframe else 0) | (FLAG_REFINEMENT if picture.refinement else 0)
        message = pack_video_header(flags, self.slot, sequence, picture.capture_us, picture.kind) + picture.data
        if self.outbox.push_video(message, strict=self.choice.slow):
            self.waiting_keyframe = False
            self.asked_keyframe = self.asked_keyframe and not picture.keyframe
            return True
        if not self.waiting_keyframe and self.light:
            self.skipped += 1
            self.choice.light_skipped()  # its light stream gets a smaller share of the link
        elif not self.waiting_keyframe and not self.choice.slow:  # (a slow viewer waiting again is no new skip)
            self.skipped += 1
            self.choice.skipped()
        self.waiting_keyframe = True
        self.asked_keyframe = False
        self.outbox.skip_queued(self.slot)  # stale beside the keyframe it resumes at
        if not self.follow_link(request_keyframe):  # (a switch asks the light stream's keyframe itself)
            self._ask_keyframe(request_keyframe)
        return False

    def follow_link(self, request_keyframe: Callable[[bool], None]) -> bool:
        """Move to the light stream when the link became slow, back when it recovered; True on a move. The
        viewer then waits for the other stream's keyframe, with its `video-config` in front. Each offer calls it,
        and `FrameFeed.follow_links` between pictures."""
        link = self.outbox.link
        rate = link.rate
        # Unmeasured, a stall says nothing of the link: resume at the full stream's keyframe as before.
        slow = self.choice.update(rate, link.reporting, link.delivered, link.falling, link.lossy) and rate is not None
        if slow and self.choice.probe is not None:
            slow = not self._pad()
        if slow == self.light:
            return False
        self.light = slow
        log.info("viewer moves to the %s stream (link %s kbit/s, %s)", "light" if slow else "full",
                 "?" if rate is None else round(rate * 8 / 1000), "reported" if link.reporting else "measured",
                 extra={"frame": self.frame_id})
        self.waiting_keyframe = True
        self.configured = False
        self.asked_keyframe = False
        self.outbox.skip_queued(self.slot)
        self._ask_keyframe(request_keyframe)
        return True

    def _pad(self) -> bool:
        """Keep a probe's padding to its schedule; True once it passed (link.py `Probe`)."""
        probe, link, outbox = self.choice.probe, self.outbox.link, self.outbox
        assert probe is not None
        now = self.choice.clock()
        delay = outbox.delay_s()
        over = delay is not None and delay > outbox.budget_s
        if over or probe.done(now):
            outbox.drop_padding()
            return self.choice.probe_ended(link.delivered, aborted=over)
        owed = probe.owed(now)
        while owed > 0:
            chunk = min(PADDING_CHUNK, max(VIDEO_HEADER.size, owed))
            outbox.push_padding(pack_padding(self.slot, chunk))
            probe.padded += chunk
            owed -= chunk
        return False

    def _ask_keyframe(self, request_keyframe: Callable[[bool], None]) -> None:
        """Ask for the keyframe to resume at once there is room for it in the queue: a slow link gets them at
        the rate it carries them, instead of making the frame send one a second to everybody."""
        if self.asked_keyframe:
            return
        self.asked_keyframe = True
        light = self.light

        def ask() -> None:
            if self.waiting_keyframe and self.light == light:
                request_keyframe(light)
            else:
                self.asked_keyframe = False

        self.outbox.call_when_room(ask)


def _nothing() -> None:
    pass


def _no_light(kbps: int | None) -> None:
    pass


@dataclass(eq=False)
class FrameFeed:
    """Numbers one frame's pictures and hands them to its viewers."""

    request_keyframe: Callable[[], None]
    request_light_keyframe: Callable[[], None] = _nothing
    set_light: Callable[[int | None], None] = _no_light  # the light stream's cap in kbit/s, None: not needed
    sequence: int = 0
    codec: str | None = None
    light_sequence: int = 0  # the light stream's own numbering: its viewers get a `video-config` first
    light_codec: str | None = None
    light_pictures: int = 0
    light_kbps: int | None = None
    last_picture_us: int = 0
    pictures: int = 0
    keyframes: int = 0
    bytes_encoded: int = 0
    dropped: int = 0  # pictures not delivered to a viewer that was behind
    skips: int = 0  # times a viewer fell behind and skipped to a keyframe
    viewers: set[Viewer] = field(default_factory=set)
    listeners: set[Viewer] = field(default_factory=set)  # hear its events only: hidden or out of sight
    patch_gate: PatchGate = field(default_factory=PatchGate)  # open while every viewer takes patches
    # The last keyframe and its refinements, with their sequence numbers, while nothing changed after it.
    _since_keyframe: list[tuple[Picture, int]] = field(default_factory=list)
    _since_keyframe_bytes: int = 0
    # (after capture µs, only changed pictures, future): resolved by the first such picture published.
    _waiters: list[tuple[int, bool, asyncio.Future[int]]] = field(default_factory=list)

    def add(self, viewer: Viewer, *, replay: bool = True) -> None:
        """Start `viewer` at the kept keyframe when it still shows the page (and `replay`: the frame is live
        and its pipeline has caught up), otherwise at a fresh keyframe it asks for."""
        self.viewers.add(viewer)
        self._update_gate()
        viewer.waiting_keyframe = True
        if not (replay and self._since_keyframe):
            self.request_keyframe()
            return
        skipped = viewer.skipped
        try:
            for picture, sequence in self._since_keyframe:
                if not viewer.offer(picture, sequence, self._ask):
                    return  # its outbox is full: it waits for the keyframe the offer asked for
        finally:
            self.skips += viewer.skipped - skipped  # a joiner whose link cannot take the chain skips too
            # It may have moved to the light stream: make that now, as a still page sends no picture that would.
            self._update_gate()

    def follow_links(self) -> None:
        """Let each light viewer look at its link again between pictures: a probe's padding keeps to its schedule
        and a viewer whose hold ended goes back. Its owner calls this every `LINK_CHECK_S` while the light stream is
        made (`set_light`): a still page offers no picture that would, and its viewers stayed on the light
        stream, at the CSS size, until the page changed."""
        for viewer in [v for v in self.viewers if v.light]:
            viewer.follow_link(self._ask)
        self._update_gate()

    @property
    def slow_viewers(self) -> int:
        """Viewers on the light stream because their link cannot carry the frame's stream."""
        return sum(v.light for v in self.viewers)

    def listen(self, viewer: Viewer) -> None:
        """`viewer` hears the frame's events but takes none of its pictures (a watcher whose page is hidden)."""
        self.listeners.add(viewer)

    def audience(self) -> list[Viewer]:
        """Everyone who hears the frame's events: its viewers and its listeners."""
        return [*self.viewers, *self.listeners]

    def remove(self, viewer: Viewer) -> None:
        self.viewers.discard(viewer)
        self.listeners.discard(viewer)
        self._update_gate()

    def remove_all(self) -> None:
        self.viewers.clear()
        self.listeners.clear()
        self._update_gate()

    def _ask(self, light: bool) -> None:
        (self.request_light_keyframe if light else self.request_keyframe)()

    def _update_gate(self) -> None:
        # Patches only while every viewer of the full stream takes them: the others need every change in their
        # H.264 stream. The light stream has none.
        full = [v for v in self.viewers if not v.light]
        self.patch_gate.open = bool(full) and all(v.patches for v in full)
        self.patch_gate.copies = self.patch_gate.open and all(v.copies for v in full)
        # The light stream while anyone takes it, capped to what the slowest of them carries (measured where
        # its link held sends back: a light stream below its link leaves at once and would read it as loopback).
        kbps = light_kbps([((v.outbox.link.held_rate or 0.0) * v.choice.share(), v.outbox.link.reporting)
                           for v in self.viewers if v.light])
        current = self.light_kbps
        if (kbps is None) != (current is None) or (kbps is not None and current is not None
                                                   and needs_recap(current, kbps)):
            self.light_kbps = kbps
            self.set_light(kbps)

    def restarted(self) -> None:
        """A new encoder starts: every viewer waits for its first keyframe and gets a fresh video-config."""
        for viewer in self.viewers:
            viewer.waiting_keyframe = True
            viewer.configured = False
        self.forget()

    def forget(self) -> None:
        """The encoder stopped: its pictures no longer show the page as it is, so no joiner gets them."""
        self._keep_since_keyframe(None)

    def publish(self, picture: Picture) -> None:
        self.sequence = (self.sequence + 1) & 0xFFFFFFFF
        if picture.codec is not None:
            self.codec = picture.codec
        self.last_picture_us = picture.capture_us
        self.pictures += 1
        self.keyframes += picture.keyframe
        self.bytes_encoded += len(picture.data)
        self._keep_since_keyframe(picture)
        self._offer(picture, self.sequence)
        if self._waiters:
            keep = []
            for after_us, changed_only, future in self._waiters:
                if future.done():
                    continue
                if picture.capture_us > after_us and (picture.changed or not changed_only):
                    future.set_result(picture.capture_us)
                else:
                    keep.append((after_us, changed_only, future))
            self._waiters = keep

    def publish_light(self, picture: Picture) -> None:
        """A picture of the light stream, for the viewers on it."""
        self.light_sequence = (self.light_sequence + 1) & 0xFFFFFFFF
        self.light_codec = picture.codec or self.light_codec
        self.light_pictures += 1
        self._offer(picture, self.light_sequence)

    def _offer(self, picture: Picture, sequence: int) -> None:
        for viewer in list(self.viewers):
            skipped = viewer.skipped
            if not viewer.offer(picture, sequence, self._ask):
                self.dropped += 1
            self.skips += viewer.skipped - skipped
        self._update_gate()  # a viewer may have moved between the streams

    def _keep_since_keyframe(self, picture: Picture | None) -> None:
        """Remember `picture` for joiners (None: forget them all). Only a keyframe and the refinements of the same
        picture are kept: a change after it (a delta or a patch) makes the keyframe older than the page."""
        if picture is None or picture.keyframe or picture.changed:
            self._since_keyframe, self._since_keyframe_bytes = [], 0
        if picture is None or not (picture.keyframe or self._since_keyframe):
            return
        self._since_keyframe_bytes += len(picture.data)
        self._since_keyframe.append((picture, self.sequence))
        if len(self._since_keyframe) > OUTBOX_MAX_PICTURES or self._since_keyframe_bytes > OUTBOX_MAX_BYTES:
            self._since_keyframe, self._since_keyframe_bytes = [], 0  # (cannot fit one outbox: ask instead)

    async def wait_change(self, after_us: int, timeout: float) -> int | None:
        """The capture time of the first changed picture captured after `after_us`, or None after `timeout`."""
        return await self._wait(after_us, True, timeout)

    async def wait_picture(self, after_us: int, timeout: float) -> int | None:
        """The capture time of the first picture (changed or not: a keyframe of a still page counts) captured
        after `after_us`, or None after `timeout`."""
        return await self._wait(after_us, False, timeout)

    async def _wait(self, after_us: int, changed_only: bool, timeout: float) -> int | None:
        future: asyncio.Future[int] = asyncio.get_running_loop().create_future()
        self._waiters.append((after_us, changed_only, future))
        try:
            async with asyncio.timeout(timeout):
                return await future
        except TimeoutError:
            return None
