"""Who drives each frame: latest drive grant wins, a person who takes over holds, step grants are single-use,
held input is released.

Pure decisions: the edge verifies the token, checks `claims.allows("drive", frame)`, asks ReplayGuard for
step grants, then asks the frame's FrameControl; it applies the accepted events, sends `release` to the
page first when the driver changed, and calls `record` with what it applied.

Two kinds of driver: an agent (its grants are one-step grants, a fresh one per step) and a person (any other
drive grant). A person who takes the frame holds it: agent steps are refused `taken-over` until the person
hands it back (`hand_back`), gives no input for `hold_s`, or the edge ends the hold (they disconnected).
"""

from __future__ import annotations

import heapq
from collections.abc import Sequence
from dataclasses import dataclass

from framestream.core.tokens import CLOCK_SKEW_S, Claims
from framestream.core.wire import (
    BUTTON_BITS,
    DriverKind,
    InputEvent,
    KeyEvent,
    MouseButton,
    MouseEvent,
    TouchEvent,
    WheelEvent,
)


class ReplayGuard:
    """Remembers the jti of every step grant used, until the grant could no longer verify anyway.

    One per process (a jti is unique across frames). Fails closed: when `max_entries` live grants are
    remembered, further step grants are refused rather than forgetting one that could then be replayed.
    """

    def __init__(self, max_entries: int = 100_000) -> None:
        self._max = max_entries
        self._until: dict[str, float] = {}
        self._heap: list[tuple[float, str]] = []  # (forget-after time, jti), soonest first

    def __len__(self) -> int:
        return len(self._until)

    def check_and_mark(self, claims: Claims, now: float) -> bool:
        """True the first time a step grant is used, False on a replay. Non-step grants are reusable: True."""
        if not claims.step:
            return True
        self.prune(now)
        if claims.jti in self._until or len(self._until) >= self._max:
            return False
        # After exp + skew, verify() refuses the token as expired, so the jti need not be kept.
        until = claims.exp + CLOCK_SKEW_S
        self._until[claims.jti] = until
        heapq.heappush(self._heap, (until, claims.jti))
        return True

    def prune(self, now: float) -> None:
        while self._heap and self._heap[0][0] < now:
            _, jti = heapq.heappop(self._heap)
            self._until.pop(jti, None)


@dataclass(frozen=True, slots=True)
class Grant:
    """The driving grant of a frame."""

    jti: str
    sub: str
    iat: float
    exp: float
    step: bool

    @property
    def kind(self) -> DriverKind:
        return "agent" if self.step else "person"


def _grant_of(claims: Claims) -> Grant:
    return Grant(claims.jti, claims.sub, claims.iat, claims.exp, claims.step)


@dataclass(frozen=True, slots=True)
class Admission:
    """FrameControl's decision on one input message.

    `driver_changed`: the driving subject changed (the edge sends `control` to every viewer and applies
    `release` before the accepted events). `grant_changed`: the driving grant changed, perhaps within the same
    subject (an agent's next step grant, a person's refreshed grant); the edge may use it to update `you`.
    """

    accepted: bool
    code: str | None
    driver_changed: bool
    driver: str | None
    previous_driver: str | None
    release: tuple[InputEvent, ...]
    grant_changed: bool = False


_MAX_TIED = 1024  # equal-iat grants are rare (only minters with whole-second iat make them); bound the set
_MODIFIER_CODES = frozenset(
    ("ShiftLeft", "ShiftRight", "ControlLeft", "ControlRight", "AltLeft", "AltRight", "MetaLeft", "MetaRight")
)


class FrameControl:
    """Arbitration and held-input bookkeeping for one frame.

    The valid drive grant with the latest `iat` drives; on equal `iat` the one first presented later wins,
    and the grant it displaced stays displaced (no ping-pong between two tabs holding equal-iat grants). A
    driving grant stays the reference until it expires (exp + skew), even a used step grant, so a person's
    older grant cannot snatch control back between an agent's steps; they need a newer grant for that.
    Held buttons and keys carry over while the subject stays the same (an agent's drag over several step
    grants, a person's grant refresh mid-drag) and are released when another subject takes over.
    """

    def __init__(self, hold_s: float = 60.0) -> None:
        self._hold_s = hold_s
        self._grant: Grant | None = None
        self._since = 0.0  # when the driving subject took the frame, or it was handed back (wall seconds)
        self._last_input = 0.0  # the driving person's last admitted message: the hold counts from it
        self._floor: Grant | None = None  # the newest grant handed back: only a newer grant drives after it
        self._tied: set[str] = set()  # jtis already presented with the driving grant's iat
        self._buttons: set[MouseButton] = set()
        self._keys: dict[str, KeyEvent] = {}  # by code (or key when code is empty), in press order
        self._touches: dict[int, tuple[float, float]] = {}
        self._pointer: tuple[float, float] = (0.0, 0.0)

    @property
    def driver(self) -> str | None:
        """The subject of the driving grant (it may have expired; `admit` with a later `now` will tell)."""
        return self._grant.sub if self._grant else None

    @property
    def grant(self) -> Grant | None:
        return self._grant

    @property
    def since(self) -> float:
        """When the driver took the frame, or when it was last handed back (wall seconds; 0 before either)."""
        return self._since

    def held(self, now: float) -> bool:
        """Whether a person holds the frame at `now`: agent steps are refused `taken-over`."""
        deadline = self.hold_deadline()
        return deadline is not None and now < deadline

    def hold_deadline(self) -> float | None:
        """When a person's hold lapses without more input (its grant's expiry at the latest); None: no person
        drives."""
        grant = self._grant
        if grant is None or grant.step:
            return None
        return min(self._last_input + self._hold_s, grant.exp + CLOCK_SKEW_S)

    @property
    def holding(self) -> bool:
        """Whether any button, key or touch is held down."""
        return bool(self._buttons or self._keys or self._touches)

    def admit(self, claims: Claims, now: float) -> Admission:
        """Decide whether input under this (verified, drive) grant may reach the page now."""
        if claims.role != "drive":
            raise ValueError("only drive grants take part in control arbitration")
        current = self._grant
        if current is not None and now > current.exp + CLOCK_SKEW_S:
            current = None  # an expired grant no longer counts; any valid one may take over
        floor = self._floor
        if current is None and floor is not None and (claims.jti == floor.jti or claims.iat < floor.iat):
            return Admission(False, "superseded", False, None, None, ())
        if (current is not None and claims.step and claims.sub != current.sub and self.held(now)):
            return Admission(False, "taken-over", False, current.sub, None, ())
        if current is not None and claims.jti != current.jti and self._is_older(claims, current):
            return Admission(False, "superseded", False, current.sub, None, ())
        if not claims.step:
            self._last_input = now
        previous = self._grant
        if previous is not None and previous.jti == claims.jti:
            return Admission(True, None, False, previous.sub, None, ())
        if current is None or claims.iat != current.iat or len(self._tied) >= _MAX_TIED:
            self._tied.clear()
        self._tied.add(claims.jti)
        self._grant = _grant_of(claims)
        previous_sub = previous.sub if previous else None
        if previous_sub == claims.sub:
            return Admission(True, None, False, claims.sub, None, (), grant_changed=True)
        self._since = now
        release = self._release_events()
        self._forget_held()
        return Admission(True, None, True, claims.sub, previous_sub, release, grant_changed=True)

    def release(self, claims: Claims, now: float) -> Admission:
        """The driver hands the frame back under (verified, drive) `claims` of its own subject. Accepted with no
        change when nobody drives; refused `superseded` from anyone else."""
        current = self._grant
        if current is None or now > current.exp + CLOCK_SKEW_S:
            return Admission(True, None, False, None, None, ())
        if claims.sub != current.sub:
            return Admission(False, "superseded", False, current.sub, None, ())
        newer = claims if claims.iat > current.iat else None
        return self.hand_back(now, floor=_grant_of(newer) if newer else current)

    def hand_back(self, now: float, *, floor: Grant | None = None) -> Admission:
        """Nobody drives from `now`: what the driver held is released (returned), and no grant that is not newer
        than the one handed back (`floor`, default the driving grant) may drive again."""
        current = self._grant
        if current is None:
            return Admission(True, None, False, None, None, ())
        floor = floor or current
        if self._floor is None or floor.iat >= self._floor.iat:
            self._floor = floor
        self._grant = None
        self._tied.clear()
        self._since = now
        release = self._release_events()
        self._forget_held()
        return Admission(True, None, True, None, current.sub, release, grant_changed=True)

    def _is_older(self, claims: Claims, current: Grant) -> bool:
        return claims.iat < current.iat or (claims.iat == current.iat and claims.jti in self._tied)

    def record(self, events: Sequence[InputEvent]) -> None:
        """Track what the applied events hold down, and where the pointer is."""
        for event in events:
            if isinstance(event, MouseEvent):
                self._pointer = (event.x, event.y)
                if event.action == "down" and event.button != "none":
                    self._buttons.add(event.button)
                elif event.action == "up":
                    self._buttons.discard(event.button)
            elif isinstance(event, WheelEvent):
                self._pointer = (event.x, event.y)
            elif isinstance(event, KeyEvent):
                ident = event.code or event.key
                if event.action == "down":
                    self._keys.setdefault(ident, event)
                else:
                    self._keys.pop(ident, None)
            elif isinstance(event, TouchEvent):
                if event.action == "cancel":
                    self._touches.clear()
                elif event.action == "end":
                    if not event.points:  # an empty end lifts every finger (CDP's touchEnd semantics)
                        self._touches.clear()
                    for point in event.points:
                        self._touches.pop(point.id, None)
                else:
                    for point in event.points:
                        self._touches[point.id] = (point.x, point.y)

    def reset(self) -> None:
        """Forget held input (the browser restarted); the driving grant stays."""
        self._forget_held()
        self._pointer = (0.0, 0.0)

    def _forget_held(self) -> None:
        self._buttons.clear()
        self._keys.clear()
        self._touches.clear()

    def _release_events(self) -> tuple[InputEvent, ...]:
        out: list[InputEvent] = []
        # Ordinary keys first, modifiers last, as fingers would lift; modifiers 0 so no shortcut fires.
        keys = sorted(self._keys.values(), key=lambda k: k.code in _MODIFIER_CODES)
        out.extend(KeyEvent("up", k.key, k.code, 0) for k in keys)
        x, y = self._pointer
        mask = sum(BUTTON_BITS[b] for b in self._buttons)
        for button in sorted(self._buttons, key=lambda b: BUTTON_BITS[b]):
            mask &= ~BUTTON_BITS[button]
            # Released where the pointer last was, as a lifted finger would (Blink may still see a click
            # there: it takes the click count from the press).
            out.append(MouseEvent("up", x, y, button, mask, 0, 0))
        if self._touches:
            out.append(TouchEvent("cancel", ()))
        return tuple(out)
