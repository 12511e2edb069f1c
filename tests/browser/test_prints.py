"""A print's PDF download (browser/prints.py, browser/print_hook.py): its name, and the hook's names. The print
itself, its PDF and what it shows are proved in tests/integration/test_browser_ui.py."""

from __future__ import annotations

import pytest

from framestream.browser.print_hook import PrintHook
from framestream.browser.prints import pdf_name
from framestream.frames.files import safe_name


@pytest.mark.parametrize(("title", "name"), [
    ("Invoice 42", "Invoice 42.pdf"),
    ("  A printed \n\t page ", "A printed page.pdf"),  # as the page's title reads
    ("", "page.pdf"),
    ("   ", "page.pdf"),
    ("x" * 500, "x" * 120 + ".pdf"),
])
def test_the_pdf_is_named_after_the_pages_title(title: str, name: str) -> None:
    assert pdf_name(title) == name


def test_a_title_cannot_lead_the_pdf_out_of_the_downloads_folder() -> None:
    assert safe_name(pdf_name("../../etc/passwd")) == "passwd.pdf"
    assert "/" not in safe_name(pdf_name("a/b\\c")) and not safe_name(pdf_name("..")).startswith(".")


def test_each_launch_names_the_hook_anew_and_its_script_calls_only_its_binding() -> None:
    first, second = PrintHook.new(), PrintHook.new()
    assert first.binding != second.binding and first.world != second.world
    assert first.binding in first.script() and second.binding not in first.script()
