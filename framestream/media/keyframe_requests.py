"""The keyframe asks a frame's pipeline shares between the event loop and its worker thread.

Split from media/pipeline.py, which owns the lock: nothing here locks, every method is called with the
pipeline's lock held (so its locking stays as it was), and it knows nothing of capture or encoding.
"""

from __future__ import annotations

from framestream.core.pacing import EncodePolicy

# A keyframe asked for by someone who has seen every picture so far: only one made after the ask serves them.
_SEEN_ALL = 1 << 62


class KeyframeRequests:
    """Pending keyframe and fresh-picture requests, and the pictures emitted that decide whether one is served."""

    def __init__(self) -> None:
        self._keyframe_requested = False
        self._fresh_requested = False  # a keyframe of a full grab, at the next slot (see ask_fresh)
        self._request_seen = -1  # the most any pending keyframe asker had seen (see ask_keyframe)
        self._emitted = 0  # pictures handed to on_picture, numbered from 1
        self._last_keyframe_index = 0
        # Generations of the kept picture: it shows the page only once a grab made after the newest fresh
        # request has replaced it (a resume, a page just loaded); until then no screenshot or light picture is
        # taken from it.
        self.want_generation = 0
        self.last_generation = 0

    @property
    def kept_is_current(self) -> bool:
        """The kept picture was grabbed since the newest fresh request."""
        return self.last_generation >= self.want_generation

    def ask_keyframe(self, published: int | None) -> bool:
        """Ask for an IDR; False when a keyframe after the `published` pictures is already on its way."""
        if published is not None and self._last_keyframe_index > published:
            return False
        self._keyframe_requested = True
        # Every pending asker must be served: a keyframe counts only if it comes after all they have seen.
        seen = published if published is not None else _SEEN_ALL
        self._request_seen = max(self._request_seen, seen)
        return True

    def ask_fresh(self) -> None:
        """Ask for a keyframe of the whole screen as it is now; the kept picture counts as stale until grabbed."""
        self._fresh_requested = True
        self._keyframe_requested = True
        self._request_seen = _SEEN_ALL
        self.want_generation += 1

    def take(self, policy: EncodePolicy, paused: bool) -> bool:
        """Hand the pending requests to the worker's `policy`; True when a full grab is needed (a fresh request)."""
        full_grab_needed = False
        if self._fresh_requested and not paused:
            self._fresh_requested = False
            full_grab_needed = True  # the screen itself, not damage that may not have arrived yet
            policy.request_keyframe(at_once=True)
        if self._keyframe_requested:
            self._keyframe_requested = False
            # A keyframe emitted since the request was made (while the worker was busy) serves it.
            if self._last_keyframe_index <= self._request_seen:
                policy.request_keyframe()
            self._request_seen = -1
        return full_grab_needed

    def note_emitted(self, keyframe: bool) -> None:
        """One more picture handed to on_picture."""
        self._emitted += 1
        if keyframe:
            self._last_keyframe_index = self._emitted


__all__ = ["KeyframeRequests"]
