"""The pages of a frame, and what they ask of their driver: pure bookkeeping, no I/O.

A frame owns every page its browser opens (the first page, popups, new tabs). One of them is active: it is on top
of the frame's screen, so the stream shows it and input goes to it. Pages form a stack: a new page goes on top and
becomes active; a page that closes hands the frame back to the page below it (a popup back to its opener).

Dialogs (`alert`, `confirm`, `prompt`, `beforeunload`) and file choosers are questions a page asks; each gets an
id the driver answers by. A dialog nobody answers is dismissed after a timeout, so no page stays frozen for good.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Any

# A frame is one tab's worth of browsing: the first page plus popups and new tabs. Past this, a page that opens
# another has it closed at once (and told), instead of a frame growing browsers without bound.
MAX_PAGES = 8
DIALOG_KINDS = ("alert", "confirm", "prompt", "beforeunload")
DIALOG_TIMEOUT_S = 60.0
# What may be recorded as a frame's URL (and reopened after a restart): the pages a frame may be created at.
RECORDABLE_SCHEMES = ("http", "https")


@dataclass(slots=True)
class Page:
    id: str  # short, public: what `page` messages name
    target_id: str  # DevTools target
    session_id: str  # flattened DevTools session attached to the target
    url: str = ""
    title: str = ""
    responsive: bool = True
    opener: str | None = None  # the page id that opened it

    def describe(self, active: bool) -> dict[str, Any]:
        return {"id": self.id, "url": self.url, "title": self.title, "active": active,
                "responsive": self.responsive}


@dataclass
class PageStack:
    """Pages in activation order: the last one is active."""

    _pages: list[Page] = field(default_factory=list)
    _ids: itertools.count[int] = field(default_factory=lambda: itertools.count(1))

    def new_id(self) -> str:
        return f"p{next(self._ids)}"

    def __len__(self) -> int:
        return len(self._pages)

    def __iter__(self) -> Any:
        return iter(list(self._pages))

    @property
    def active(self) -> Page | None:
        return self._pages[-1] if self._pages else None

    def full(self, limit: int = MAX_PAGES) -> bool:
        return len(self._pages) >= limit

    def push(self, page: Page) -> None:
        """A new page opens on top (the browser shows it there)."""
        self._pages.append(page)

    def get(self, page_id: str) -> Page | None:
        return next((p for p in self._pages if p.id == page_id), None)

    def by_target(self, target_id: str) -> Page | None:
        return next((p for p in self._pages if p.target_id == target_id), None)

    def by_session(self, session_id: str | None) -> Page | None:
        return next((p for p in self._pages if p.session_id == session_id), None)

    def activate(self, page_id: str) -> Page | None:
        page = self.get(page_id)
        if page is not None:
            self._pages.remove(page)
            self._pages.append(page)
        return page

    def remove(self, target_id: str) -> tuple[Page | None, bool]:
        """Forget a closed page; returns it and whether it was the active one (the page below takes over)."""
        page = self.by_target(target_id)
        if page is None:
            return None, False
        was_active = page is self.active
        self._pages.remove(page)
        return page, was_active

    def describe(self) -> list[dict[str, Any]]:
        active = self.active
        return [p.describe(p is active) for p in self._pages]


@dataclass(frozen=True, slots=True)
class Dialog:
    id: str
    page_id: str
    kind: str
    message: str
    default: str
    opened_at: float  # monotonic

    def expired(self, now: float, timeout: float = DIALOG_TIMEOUT_S) -> bool:
        return now - self.opened_at >= timeout


def dialog_kind(cdp_type: object) -> str:
    """CDP's dialog type as the contract names it (an unknown one is treated as an alert)."""
    return cdp_type if isinstance(cdp_type, str) and cdp_type in DIALOG_KINDS else "alert"


@dataclass(frozen=True, slots=True)
class FileChooser:
    id: str
    page_id: str
    session_id: str
    backend_node_id: int | None
    multiple: bool
    accept: tuple[str, ...]


def parse_accept(attribute: object) -> tuple[str, ...]:
    """An `<input accept=...>` value as a list of its comma-separated entries (".png", "image/*")."""
    if not isinstance(attribute, str):
        return ()
    return tuple(part.strip() for part in attribute.split(",") if part.strip())


__all__ = ["DIALOG_KINDS", "DIALOG_TIMEOUT_S", "MAX_PAGES", "RECORDABLE_SCHEMES", "Dialog", "FileChooser", "Page",
           "PageStack", "dialog_kind", "parse_accept"]
