"""framestream/mcp/page_news.py: what a step's answer tells a model about pages, dialogs and file choosers (pure)."""

from __future__ import annotations

from framestream.mcp.page_news import dialog_to_answer, new_pages_loading, news, pages_listing

P1 = {"id": "p1", "url": "http://127.0.0.1:3000/", "title": "Home", "active": True, "responsive": True}
P1_BEHIND = {**P1, "active": False}
P2 = {"id": "p2", "url": "http://127.0.0.1:3000/login", "title": "Log in", "active": True, "responsive": True}


def test_nothing_new_is_nothing_said() -> None:
    assert news([P1], [P1], [], []) == []
    assert news([], [], [], []) == []  # a frame without a running browser: no pages either side
    # Pages not known before the step (its browser reopening) or after it (closed meanwhile): none told.
    assert news([], [P1], [], []) == []
    assert news([P1], [], [], []) == []


def test_a_new_page_shown_is_named_with_its_url_and_the_tools() -> None:
    said = news([P1], [P1_BEHIND, P2], [], [])
    assert said == ['A new page opened and is shown: p2 "Log in" at http://127.0.0.1:3000/login '
                    "(list_pages, switch_page, close_page)"]
    behind = news([P1], [P1, {**P2, "active": False}], [], [])
    assert behind[0].startswith('A new page opened: p2 "Log in"')
    loading = news([P1], [P1_BEHIND, {**P2, "url": "", "title": ""}], [], [])
    assert 'p2 "" still loading' in loading[0]


def test_a_closed_page_and_a_switch_are_said() -> None:
    assert news([P1_BEHIND, P2], [P1], [], []) == ["Page p2 closed", "Page p1 is shown now"]
    assert news([P1_BEHIND, P2], [P1, {**P2, "active": False}], [], []) == ["Page p1 is shown now"]


def test_dialogs_are_told_with_their_message_and_how_to_answer() -> None:
    confirm = {"id": "d1", "page": "p1", "kind": "confirm", "message": "Delete 3 files?", "default": ""}
    prompt = {"id": "d2", "page": "p1", "kind": "prompt", "message": "Name?", "default": "x"}
    [said] = news([P1], [P1], [confirm], [])
    assert said.startswith('A confirm dialog is open on page p1: "Delete 3 files?"; answer it with answer_dialog')
    assert "takes no other step" in said
    [said] = news([P1], [P1], [prompt], [])
    assert '"Name?" (default text "x")' in said and "text for OK" in said
    [said] = news([P1], [P1], [{**confirm, "kind": "alert", "message": "x" * 500}], [])
    assert "answer_dialog closes it" in said and "…" in said and len(said) < 400


def test_the_newest_file_chooser_is_told() -> None:
    choosers = [{"id": "c1", "multiple": False, "accept": []},
                {"id": "c2", "multiple": True, "accept": ["image/png", ".png"]}]
    assert news([P1], [P1], [], choosers) == [
        "A file chooser is open (several files, image/png, .png): answer it with choose_files"]


def test_the_dialog_answered_is_the_shown_pages_else_the_oldest() -> None:
    on_p1 = {"id": "d1", "page": "p1"}
    on_p2 = {"id": "d2", "page": "p2"}
    assert dialog_to_answer([], [P1]) is None
    assert dialog_to_answer([on_p1, on_p2], [P1_BEHIND, P2]) == on_p2
    assert dialog_to_answer([on_p1, on_p2], [P1]) == on_p1
    assert dialog_to_answer([on_p2, on_p1], []) == on_p2


def test_listing_and_loading() -> None:
    assert pages_listing([P1, {"id": "p3", "url": "", "active": False, "responsive": False}]) == [
        {"page": "p1", "url": "http://127.0.0.1:3000/", "title": "Home", "active": True, "responsive": True},
        {"page": "p3", "url": "", "title": "", "active": False, "responsive": False}]
    assert new_pages_loading([P1], [P1, {"id": "p2", "url": ""}])
    assert not new_pages_loading([P1], [P1, P2])
    assert not new_pages_loading([], [{**P1, "url": ""}])  # pages not known before: none is new
    assert not new_pages_loading([{**P1, "url": ""}], [{**P1, "url": ""}])  # only pages opened since count


def test_copied_text_is_quoted_whole_up_to_a_bound() -> None:
    assert news([P1], [P1], [], [], "sk-123") == ['The page copied 6 characters to its clipboard: "sk-123"']
    [said] = news([P1], [P1], [], [], "y" * 5000)
    assert said.startswith("The page copied 5000 characters") and said.endswith("…\"") and len(said) < 4100
    assert news([P1], [P1], [], [], None) == []
