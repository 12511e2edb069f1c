"""Keys that would open the browser's own UI over a shared page, or close it (browser/key_guard.py), against the
real service (Xvfb, Chromium in kiosk mode, libx264): pressed by an agent, none of them changes the picture, and
the page still answers."""

from __future__ import annotations

import numpy as np
import pytest

from framestream.browser.key_guard import BROWSER_UI_KEYS
from framestream.client import Client, png_to_rgb
from tests.client.agent_page import BUTTON, GREY, RED, near
from tests.fixtures import service_fixture

pytestmark = pytest.mark.integration

service = service_fixture(scope="module")


def combo(code: str, ctrl: bool, shift: bool, alt: bool, meta: bool) -> str:
    """`Client.press`'s spelling of a key: modifiers, then the key (KeyA -> A)."""
    names = [name for name, held in (("Control", ctrl), ("Shift", shift), ("Alt", alt), ("Meta", meta)) if held]
    return "+".join([*names, code.removeprefix("Key")])


def test_no_editing_key_is_taken_from_the_browser() -> None:
    """Editing runs as the default action of a key (Ctrl+A/C/V/X/Z/Y, Backspace, Delete alone): guarding one would
    break typing in every page."""
    editing = {(f"Key{c}", True, False, False, False) for c in "ACVXZY"} | {("KeyZ", True, True, False, False)}
    editing |= {(code, False, False, False, False) for code in ("Backspace", "Delete", "Escape", "Enter", "Tab")}
    assert not editing & set(BROWSER_UI_KEYS)
    assert len(set(BROWSER_UI_KEYS)) == len(BROWSER_UI_KEYS)


async def test_keys_that_open_the_browsers_ui_or_close_the_page_change_nothing_shown(client: Client,
                                                                                   frame: str) -> None:
    """Before, Ctrl+Shift+A left the tab search bubble over the page (tests/web/test_viewer_robustness.py, once in
    CI), Ctrl+Shift+N an incognito window over all of it, Shift+Escape the task manager, and Ctrl+W or Alt+F4 left
    the frame without a page. After all of them, a click still turns the button red, and the picture that shows it
    is the page as it was apart from the button."""
    view = await client.watch(frame)
    await view.picture_after(0, where=lambda p: near(p.pixel(*BUTTON), GREY))
    before = png_to_rgb((await client.screenshot(frame)).png).astype(int)
    for key in BROWSER_UI_KEYS:
        await client.press(frame, combo(*key))
    # Input is applied in order: whatever those keys opened is on screen before the click's picture.
    step = await client.click(frame, *BUTTON)
    await view.picture_after(step.sent_us, where=lambda p: near(p.pixel(*BUTTON), RED))
    after = png_to_rgb((await client.screenshot(frame)).png).astype(int)
    button = np.abs(before - GREY).sum(axis=2) < 30
    changed = (np.abs(after - before).sum(axis=2) > 30) & ~button
    assert changed.mean() < 0.001, f"{changed.mean():.3f} of the picture changed: the browser's UI over the page"
