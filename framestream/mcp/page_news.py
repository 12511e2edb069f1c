"""What a model must be told about a frame beyond its picture: the browser's own dialogs and file choosers (never
drawn in the page) and its pages (tabs). Pure: each function reads what the client's `FrameView` holds.

A page's `alert`, `confirm` or `prompt` blocks it, and every later step to it is refused (`dialog-open`) until the
dialog is answered; a link with `target=_blank` shows another page. Neither is seen in the picture the way a model
reads it, so each step's answer says so, and names the tool that deals with it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["active_page", "dialog_to_answer", "new_pages_loading", "news", "page_ids", "pages_listing"]

Message = Mapping[str, Any]
COPIED_SHOWN = 4000  # characters of copied text an answer quotes (the service passes at most 64 KiB)


def pages_listing(pages: Sequence[Message]) -> list[dict[str, object]]:
    """The frame's pages as a model reads them: id, url, title, whether shown, whether it answers."""
    return [{"page": str(p.get("id")), "url": str(p.get("url", "")), "title": str(p.get("title", "")),
             "active": bool(p.get("active")), "responsive": p.get("responsive", True) is not False} for p in pages]


def page_ids(pages: Sequence[Message]) -> list[str]:
    return [str(p.get("id")) for p in pages]


def active_page(pages: Sequence[Message]) -> str | None:
    return next((str(p.get("id")) for p in pages if p.get("active")), None)


def dialog_to_answer(dialogs: Sequence[Message], pages: Sequence[Message]) -> Message | None:
    """The open dialog an answer is for: the one on the page shown, else the oldest."""
    if not dialogs:
        return None
    shown = active_page(pages)
    return next((d for d in dialogs if d.get("page") == shown), dialogs[0])


def new_pages_loading(before: Sequence[Message], pages: Sequence[Message]) -> bool:
    """Whether a page opened since `before` has no URL yet (its first `pages` entry comes as it opens)."""
    known = set(page_ids(before))
    return bool(before) and any(not p.get("url") for p in pages if str(p.get("id")) not in known)


def _quoted(text: object, limit: int = 200) -> str:
    text = str(text or "")
    return '"' + (text if len(text) <= limit else text[: limit - 1] + "…") + '"'


def _dialog(dialog: Message) -> str:
    kind = str(dialog.get("kind", "alert"))
    said = f"A {kind} dialog is open on page {dialog.get('page')}: {_quoted(dialog.get('message'))}"
    if kind == "prompt":
        said += f" (default text {_quoted(dialog.get('default'))})"
    how = {"alert": "answer_dialog closes it",
           "prompt": "answer it with answer_dialog (accept true and text for OK, accept false for Cancel)",
           "beforeunload": "answer it with answer_dialog (accept true leaves the page, false stays)"}
    return f"{said}; {how.get(kind, 'answer it with answer_dialog (accept true for OK, false for Cancel)')}. " \
           "The page takes no other step until then"


def _chooser(chooser: Message) -> str:
    accept = ", ".join(str(a) for a in chooser.get("accept") or []) or "any file"
    many = "several files" if chooser.get("multiple") else "one file"
    return f"A file chooser is open ({many}, {accept}): answer it with choose_files"


def news(before: Sequence[Message], pages: Sequence[Message], dialogs: Sequence[Message],
         choosers: Sequence[Message], copied: str | None = None) -> list[str]:
    """Sentences for what a step left that its picture does not show: pages opened or closed since `before` (the
    pages before the step; none known on either side, as while a frame's browser reopens, tells nothing of pages),
    which page is shown when that changed, the open dialogs, the newest file chooser and the text the step copied
    (`copied`: a "copy" button's token, say)."""
    said: list[str] = []
    known = set(page_ids(before))
    listed = pages_listing(pages) if before else []  # no pages before: not known then (a browser reopening)
    for page in listed:
        if page["page"] not in known:
            shown = " and is shown" if page["active"] else ""
            where = f"at {page['url']}" if page["url"] else "still loading"
            said.append(f"A new page opened{shown}: {page['page']} {_quoted(page['title'])} {where} "
                        "(list_pages, switch_page, close_page)")
    now = {str(p["page"]) for p in pages_listing(pages)}
    if pages and (gone := [p for p in page_ids(before) if p not in now]):
        said.append(f"Page{'s' if len(gone) > 1 else ''} {', '.join(gone)} closed")
    shown_before, shown_now = active_page(before), active_page(pages)
    if before and shown_now is not None and shown_now != shown_before and shown_now in known:
        said.append(f"Page {shown_now} is shown now")
    said += [_dialog(d) for d in dialogs]
    if choosers:
        said.append(_chooser(choosers[-1]))
    if copied is not None:
        said.append(f"The page copied {len(copied)} characters to its clipboard: {_quoted(copied, COPIED_SHOWN)}")
    return said
