"""Which recordings go: pure, with time passed in. The oldest go first; a recording being written never does."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Held:
    key: tuple[str, str]  # (frame id, recording id)
    start_us: int
    end_us: int | None  # None while it is being written
    size: int  # bytes on disk (video and sidecar)

    @property
    def active(self) -> bool:
        return self.end_us is None


def to_delete(held: Iterable[Held], *, now_us: int, max_bytes: int, max_age_s: float | None) -> list[tuple[str, str]]:
    """The recordings to delete, oldest first: every finished one that ended more than `max_age_s` ago, then,
    while all of them together (those being written too) pass `max_bytes`, the oldest finished ones."""
    ordered = sorted(held, key=lambda h: (h.start_us, h.key))
    gone: list[tuple[str, str]] = []
    total = sum(h.size for h in ordered)
    for item in ordered:
        if item.active:
            continue
        too_old = max_age_s is not None and item.end_us is not None and now_us - item.end_us > max_age_s * 1e6
        if too_old or total > max_bytes:
            gone.append(item.key)
            total -= item.size
    return gone
