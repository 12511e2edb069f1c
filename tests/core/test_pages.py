from __future__ import annotations

from framestream.core.pages import Dialog, Page, PageStack, dialog_kind, parse_accept


def page(stack: PageStack, target: str) -> Page:
    return Page(stack.new_id(), target, f"s-{target}")


def test_a_new_page_goes_on_top_and_a_closed_one_hands_back_to_the_page_below() -> None:
    stack = PageStack()
    first, popup = page(stack, "t1"), page(stack, "t2")
    stack.push(first)
    stack.push(popup)
    assert stack.active is popup
    assert [p["active"] for p in stack.describe()] == [False, True]
    gone, was_active = stack.remove("t2")
    assert gone is popup and was_active
    assert stack.active is first
    assert stack.remove("t2") == (None, False)


def test_activating_moves_a_page_on_top_and_closing_a_hidden_one_keeps_the_active() -> None:
    stack = PageStack()
    a, b, c = page(stack, "a"), page(stack, "b"), page(stack, "c")
    for p in (a, b, c):
        stack.push(p)
    assert stack.activate(a.id) is a and stack.active is a
    assert stack.remove("b") == (b, False)
    assert stack.active is a
    assert stack.activate("p99") is None
    assert [p["id"] for p in stack.describe()] == [c.id, a.id]


def test_ids_are_short_unique_and_lookups_find_by_target_and_session() -> None:
    stack = PageStack()
    ids = {stack.new_id() for _ in range(5)}
    assert len(ids) == 5 and all(i.startswith("p") for i in ids)
    p = page(stack, "tx")
    stack.push(p)
    assert stack.by_target("tx") is p and stack.by_session("s-tx") is p and stack.by_session(None) is None


def test_the_limit_counts_every_page() -> None:
    stack = PageStack()
    for k in range(3):
        stack.push(page(stack, str(k)))
    assert stack.full(3) and not stack.full(4)


def test_dialog_kinds_and_timeout() -> None:
    assert dialog_kind("prompt") == "prompt"
    assert dialog_kind("beforeunload") == "beforeunload"
    assert dialog_kind("weird") == "alert" and dialog_kind(None) == "alert"
    dialog = Dialog("d1", "p1", "confirm", "ok?", "", opened_at=100.0)
    assert not dialog.expired(159.9, timeout=60.0)
    assert dialog.expired(160.0, timeout=60.0)


def test_accept_lists() -> None:
    assert parse_accept(".png, image/*,,") == (".png", "image/*")
    assert parse_accept(None) == ()
