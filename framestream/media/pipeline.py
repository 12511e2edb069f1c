"""The per-frame worker: wait for X damage, grab, check for change, encode, hand the picture over.

One thread per live frame does all of it, so the event loop never converts or encodes, and one X connection
is only ever used from one thread. The thread is owned by `FramePipeline`: `start()` launches it, `stop()`
asks it to end and joins it. Everything the loop asks of it (`request_keyframe`, `set_paused`, `stop`) is a flag
plus one byte on a wake pipe, so the worker's `select` returns at once.
"""

from __future__ import annotations

import contextlib
import logging
import select
import threading
import time
from collections.abc import Callable

import numpy as np

from framestream.core.errors import CaptureError
from framestream.core.pacing import PATCH_FLUSH_EVERY_S, Encode, EncodePolicy, PatchRule, Wait, patch_flush_at
from framestream.media.capture import DisplayCapture
from framestream.media.changes import grab_changes
from framestream.media.encoder import EncodedPicture, EncoderSettings, H264Encoder
from framestream.media.keyframe_requests import KeyframeRequests
from framestream.media.light import LightState
from framestream.media.parked import ParkedKeyframe, park, still_current
from framestream.media.picture import KIND_PATCH, PatchGate, Picture
from framestream.media.pipeline_stats import PipelineStats
from framestream.media.rects import DamageRect
from framestream.media.sender import ChangeSender
from framestream.media.wake import WakePipe
from framestream.service.heap import give_back_freed_memory

log = logging.getLogger(__name__)


# How long a paused frame keeps its capture buffers, encoder and kept picture. A viewer back within it resumes as
# fast as ever (a keyframe of the kept picture); after it the frame gives about 85 MB back at 2560x1600, and a
# resume first sends the keyframe parked at the release if the screen is unchanged (media/parked.py).
RELEASE_AFTER_S = 10.0
PictureSink = Callable[[Picture], None]
FailureSink = Callable[[Exception], None]


class FramePipeline:
    def __init__(
        self,
        display: str,
        width: int,
        height: int,
        *,
        on_picture: PictureSink,
        on_failure: FailureSink,
        settings: EncoderSettings | None = None,
        name: str = "frame",
        patch_gate: PatchGate | None = None,
        release_after_s: float = RELEASE_AFTER_S,
        light_size: tuple[int, int] | None = None,
        record_gate: PatchGate | None = None,
    ) -> None:
        self.display = display
        self.name = name  # the frame id, for logs
        self.width = width
        self.height = height
        self._on_picture = on_picture
        self._on_failure = on_failure
        self._patch_gate = patch_gate  # open: small changes may go out as patches (media/sender.py)
        self._record_gate = record_gate  # open: recorded, so patches are covered by an H.264 picture soon
        self._settings = settings or EncoderSettings()
        self._release_after_s = release_after_s
        self._policy = EncodePolicy(fps=self._settings.fps)
        self._lock = threading.Lock()
        self._requests = KeyframeRequests()  # guarded by _lock; also says whether `_last` shows the page yet
        self._paused = False
        self._stopping = False
        self._waker = WakePipe()
        self._thread = threading.Thread(target=self._run, name=f"pipeline-{name}", daemon=True)
        # The last picture as captured (BGRX), for screenshots and refinement; guarded by _lock.
        self._last: np.ndarray | None = None
        self._last_capture_us = 0
        self._last_change_us = 0
        # The light stream (media/light.py): its size, the cap the feed asks for (None: nobody takes it), and
        # a pending keyframe request for it.
        self._light_size = light_size or (width, height)
        self._light_kbps: int | None = None
        self._light_keyframe = False
        self.stats = PipelineStats()
        self.released = False  # paused long enough to have given back its capture, encoder and kept picture

    # -- called from the event loop ---------------------------------------------------------------------

    def start(self) -> None:
        self._thread.start()

    def request_keyframe(self, published: int | None = None) -> None:
        """Ask for an IDR. `published` is how many of this pipeline's pictures the loop has handed out: when
        a keyframe after those is already on its way, it will reach the asker, and no second one is made."""
        with self._lock:
            if not self._requests.ask_keyframe(published):
                return
        self._waker.wake()

    def request_fresh_keyframe(self) -> None:
        """Ask for a keyframe of the whole screen as it is now, at the next slot, beyond the keyframe budget; the
        kept picture (screenshots, the light stream) counts as stale until it is grabbed."""
        with self._lock:
            self._requests.ask_fresh()
        self._waker.wake()

    def set_light(self, kbps: int | None) -> None:
        """Make the light stream at this cap (kbit/s), or stop making it (None)."""
        with self._lock:
            changed = (kbps is None) != (self._light_kbps is None)
            self._light_kbps = kbps
        if changed:
            self._waker.wake()

    def request_light_keyframe(self) -> None:
        with self._lock:
            self._light_keyframe = True
        self._waker.wake()

    def set_paused(self, paused: bool) -> None:
        with self._lock:
            self._paused = paused
            if not paused:
                self._requests.ask_fresh()  # a resume starts every viewer at a keyframe of the screen as it is now
        self._waker.wake()

    def stop(self, timeout: float = 5.0) -> None:
        with self._lock:
            self._stopping = True
        self._waker.wake()
        if self._thread.is_alive() and threading.current_thread() is not self._thread:
            self._thread.join(timeout)
        if not self._thread.is_alive():
            # Its kept picture goes now, not whenever the collector breaks the cycles that still name this
            # pipeline, and the heap gives it back: measured, a service whose six live frames were deleted kept
            # about 120 MB more than a fresh one with the same frame.
            with self._lock:
                self._last = None
            give_back_freed_memory()
        self._waker.close()

    def snapshot(self) -> tuple[np.ndarray, int, int] | None:
        """A copy of the last captured picture, its capture time and the time of the last change (µs)."""
        with self._lock:
            if self._last is None or not self._requests.kept_is_current:
                return None  # not grabbed since a resume or a fresh request: perhaps older than the page
            return self._last.copy(), self._last_capture_us, self._last_change_us

    # -- the worker thread ------------------------------------------------------------------------------

    def _run(self) -> None:
        try:
            # Paused longer than `release_after_s`, a frame holds no encoder, capture buffers or kept picture (85 MB
            # at 2560x1600): made again on resume, whose first picture is the parked keyframe (media/parked.py).
            with contextlib.ExitStack() as owned:
                capture: DisplayCapture | None = None
                parked: ParkedKeyframe | None = None
                while self._wait_until_live():
                    self.released = False
                    if capture is None:
                        capture = owned.enter_context(DisplayCapture(self.display, self.width, self.height))
                    elif parked is not None:
                        if still_current(capture):
                            self._send_parked(parked)
                        parked = None  # (not held while live)
                    parked = self._live(capture)
                    give_back_freed_memory()
                    self.released = True  # (paused long enough; or stopping, when nobody reads it any more)
        except Exception as exc:  # the owner decides what a dead pipeline means for the frame
            with self._lock:
                stopping = self._stopping
            if not stopping:
                log.warning("capture or encoding failed on display %s: %s", self.display, exc,
                            extra={"frame": self.name})
                self._on_failure(exc)

    def _live(self, capture: DisplayCapture) -> ParkedKeyframe | None:
        """One live stretch: an encoder and the light stream, until stopping or paused long enough (then the
        screen's keyframe, the capture's buffers given back). Its own frame, so they are gone when it returns: left
        in `_run`'s locals, a released frame still held its encoder's picture and more (about 26 MB at 2560x1600)
        until it was resumed."""
        encoder = H264Encoder(self.width, self.height, self._settings)
        light = LightState(self._light_size, self._on_light, self.name)
        try:
            return self._loop(capture, encoder, light)
        finally:
            light.stop()  # its thread ends with the worker's loop, however that ends
            encoder.close()

    def _send_parked(self, parked: ParkedKeyframe) -> None:
        """The screen as the frame was released, unchanged since: it shows the page as it is now."""
        with self._lock:
            self._requests.note_emitted(keyframe=True)
        now_us = time.time_ns() // 1000
        self._on_picture(Picture(data=parked.data, keyframe=True, refinement=False, capture_us=now_us,
                                 encoded_us=now_us, codec=parked.codec, changed=False))

    def _wait_until_live(self) -> bool:
        """Block while paused; False once stopping."""
        while True:
            with self._lock:
                if self._stopping:
                    return False
                if not self._paused:
                    return True
            self._waker.wait()

    def _loop(self, capture: DisplayCapture, encoder: H264Encoder, light: LightState) -> ParkedKeyframe | None:
        """Capture and encode until stopping (None) or paused long enough (the screen's keyframe)."""
        policy = self._policy
        # The current picture: the last grab's view of the capture's memory (intact through the next grab, which
        # reads into its other segment and is compared with it), or black before the first.
        kept = np.zeros((self.height, self.width, 4), np.uint8)
        full_grab_needed = True  # the first picture, and after damage was dropped (paused)
        fresh = True  # the first picture of this capture and encoder: every row is new to them
        release_at = 0.0  # while paused: when to give everything back
        damage: list[DamageRect] = []
        # Patches or H.264 for each change; how fast content moves is judged in CSS pixels (the light size's).
        sender = ChangeSender(encoder, self._patch_gate, PatchRule(dpr=self.width / self._light_size[0]))
        flush_at: float | None = None  # when patches must be in the H.264 stream (recorded frames only)
        flushed_at = -PATCH_FLUSH_EVERY_S
        timeout = 0.0
        # Damage is read from the policy's next slot on, not as it comes: nothing is encoded before the slot, and
        # the DAMAGE extension sends no more events until it is read. An animated page woke the worker about twice a
        # picture (its paint, then the slot) and read damage 3.4 times (0.04-0.19 ms of CPU each); now it sleeps
        # until the slot and reads once (docs/performance.md).
        listening = True
        waker = self._waker.fileno()
        while True:
            ready, _, _ = select.select([capture.fileno(), waker] if listening else [waker], [], [], timeout)
            if waker in ready:
                self._waker.drain()
            with self._lock:
                if self._stopping:
                    return None
                paused = self._paused
                light_kbps, light_keyframe, self._light_keyframe = self._light_kbps, self._light_keyframe, False
                generation = self._requests.want_generation  # what a grab made from here on is fresh for
                if self._requests.take(policy, paused):
                    full_grab_needed = True
            now = time.monotonic()
            listening = paused or now >= policy.next_slot
            new_damage = capture.pending_damage() if listening else []
            if paused:
                # Kept a while, so a viewer who comes back soon resumes from the kept picture (only changed rows
                # converted, a warm encoder); then given back.
                release_at = release_at or now + self._release_after_s
                light.stop()
                if now >= release_at:
                    with self._lock:
                        self._last = None  # kept goes with the capture; a screenshot resumes the frame first
                    return park(capture, encoder)
                damage.clear()
                full_grab_needed = True
                timeout = release_at - now
                continue
            release_at = 0.0
            if new_damage:
                damage.extend(new_damage)
                policy.note_damage()
            light.want(light_kbps, light_keyframe, now)
            decision = policy.decide(now)
            if flush_at is not None and now >= flush_at:
                flush_at, flushed_at = None, now
                self._flush_patches(sender, kept)
            if not isinstance(decision, Encode):
                if flush_at is not None:
                    decision = Wait(min(decision.seconds, flush_at - now))
                timeout = min(decision.seconds, 3600.0, self._send_light(light, kept, now))
                if not listening:
                    timeout = min(timeout, max(0.0, policy.next_slot - now))
                continue
            if decision.grab and damage and not (full_grab_needed or decision.keyframe or decision.refinement):
                # A running animation's picture between its slots would only wait (PatchRule): grab it later, its
                # damage kept (a spinner at 2560x1600: 0.053 -> 0.041 vCPU, docs/performance.md).
                later = sender.grab_after(now, [(r.x, r.y, r.x + r.width, r.y + r.height) for r in damage])
                if later > 0.0:
                    timeout = min(later, self._send_light(light, kept, now))
                    continue
            rows: tuple[int, int] | None = None
            boxes: list[tuple[int, int, int, int]] = []
            capture_us = self._last_capture_us
            hint: list[tuple[int, int, int, int]] | None = None
            tight = False
            previous = kept  # the capture's other segment: intact through this grab (a scroll is found against it)
            if decision.grab and (full_grab_needed or damage):
                # Band grabs are exact only with every damage rectangle since the last grab, which we have. A new
                # capture's first grab is new in every row: the new encoder's own picture is blank.
                grabbed = grab_changes(capture, kept, None if full_grab_needed else damage, fresh=fresh,
                                       tight=sender.compares_tightly(now), blocks=sender.compares_blocks())
                if grabbed.block_share is not None:
                    sender.blocks.note(grabbed.block_share)
                frame, boxes, hint, tight = grabbed.picture, grabbed.boxes, grabbed.hint, grabbed.tight
                capture_us = time.time_ns() // 1000
                fresh = False
                rows = (min(b[1] for b in boxes), max(b[3] for b in boxes)) if boxes else None
                full_grab_needed = False
                damage.clear()
                kept = frame  # every changed pixel is in a box (media/diff.py); the rest is as it was
                with self._lock:  # snapshot() copies `_last`: the grab after next is the first to write over it
                    if rows is not None:
                        self._last_change_us = capture_us
                        self.stats.changes += 1
                    self._last = kept
                    self._last_capture_us = capture_us
                    self._requests.last_generation = generation
            changed = rows is not None
            patched = False
            if changed or decision.keyframe or decision.refinement:
                started = time.perf_counter()
                out = sender.send(kept, now=now, keyframe=decision.keyframe, refinement=decision.refinement,
                                  rows=rows, boxes=boxes, hint=hint, tight=tight, previous=previous)
                self.stats.encode_seconds += time.perf_counter() - started
                self.stats.pictures += 1
                if out is not None:
                    patched = out.kind == KIND_PATCH
                    self.stats.patches += patched
                    self.stats.patch_bytes += out.patch_bytes
                    with self._lock:
                        self._requests.note_emitted(out.keyframe)
                    self._on_picture(
                        Picture(
                            data=out.data,
                            keyframe=out.keyframe,
                            refinement=out.refinement,
                            capture_us=capture_us,
                            encoded_us=time.time_ns() // 1000,
                            codec=None if patched else encoder.codec_string,
                            changed=changed,
                            kind=out.kind,
                        )
                    )
            # The slot is when this picture was decided, not when its encode ended: otherwise every picture's
            # encode time would stretch the period (measured: 24 fps at 1280x800, 15 at 2560x1600).
            policy.note_encoded(now, decision, changed=changed, patched=patched)
            if not sender.pending:
                flush_at = None
            elif flush_at is None and self._record_gate is not None and self._record_gate.open:
                flush_at = patch_flush_at(now, flushed_at)
            if changed:
                light.changed(now)
            self._send_light(light, kept, now)
            timeout = 0.0  # ask the policy again at once: it knows the next deadline

    def _flush_patches(self, sender: ChangeSender, kept: np.ndarray) -> None:
        """A sharp H.264 picture of what went out only as patches, for the recording (viewers get it too: it is the
        next picture of the one stream, and a refinement of what they show)."""
        started = time.perf_counter()
        out = sender.flush(kept)
        self.stats.encode_seconds += time.perf_counter() - started
        if out is None:
            return
        self.stats.pictures += 1
        with self._lock:
            self._requests.note_emitted(keyframe=False)
        # Timed as the last change it shows (a later grab that found nothing new says nothing of this picture).
        with self._lock:
            shown_us = self._last_change_us or self._last_capture_us
        self._on_picture(Picture(data=out.data, keyframe=False, refinement=True, capture_us=shown_us,
                                 encoded_us=time.time_ns() // 1000, codec=sender.codec, changed=False))

    def _send_light(self, light: LightState, kept: np.ndarray, now: float) -> float:
        """Hand the light stream a picture when one is due; seconds until the next may be (3600: none)."""
        # (nothing grabbed yet, or not since a resume: nothing that shows the page to send)
        if self._last is not None and self._requests.kept_is_current:
            light.send(kept, now, self._last_capture_us)
        deadline = light.deadline(time.monotonic())
        return 3600.0 if deadline is None else deadline

    def _on_light(self, picture: EncodedPicture, codec: str | None, capture_us: int) -> None:
        """From the light stream's thread."""
        self.stats.light_pictures += 1
        self._on_picture(Picture(data=picture.data, keyframe=picture.keyframe, refinement=picture.refinement,
                                 capture_us=capture_us, encoded_us=time.time_ns() // 1000, codec=codec,
                                 changed=not picture.refinement, light=True))


__all__ = ["CaptureError", "FramePipeline", "Picture", "PipelineStats"]
