"""The viewer's tab UI (web/lib/tabui.js and its parts) in a real headless Chromium against the real service.

`framestream serve` streams tests/web/pages/tabui.html (CSS 640x400, dpr 1: a CSS position is a canvas pixel);
the viewer page served at `/` shows what the frame's pages ask and offer in its own UI, and the tests use that UI
the way a person would (real clicks and keys in the viewer's browser; files picked on the viewer's own
<input type=file> through DevTools) and read the answer back from the decoded canvas. Colours are tabui.html's
after H.264 (tolerance 24 per channel).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from framestream.client import rgb_to_png
from tests.fixtures import service_fixture
from tests.support import Service
from tests.web.browser import JS_CANVAS_POINT, Page, open_viewer, wait_pixel

# One event loop, one viewer browser for the module (a fresh Chromium per test costs ~1.5 s each).
pytestmark = [pytest.mark.integration, pytest.mark.asyncio(loop_scope="module")]

CSS_W, CSS_H = 640, 400
RED = (200, 40, 40)
GREEN = (30, 180, 60)
BLUE = (30, 60, 200)
PURPLE = (140, 40, 200)
WHITE = (255, 255, 255)
# CSS centres of tabui.html's zones
CONFIRM = (110, 70)
PROMPT = (310, 70)
FILEZONE = (510, 70)
NEWTAB = (110, 190)
DOWNLOAD = (310, 190)
COPY = (510, 190)
PASTE = (160, 310)
PASTEFLAG = (430, 310)
BLANK = (600, 385)  # white on tabui.html, blue on page2.html

PAGES_DIR = Path(__file__).parent / "pages"

service = service_fixture(scope="module", pages="web_pages", timeout=60)


@pytest.fixture
def make_frame(service: Service, web_pages: str) -> Iterator[Callable[[], str]]:
    """Make frames of tabui.html live (CSS 640x400, dpr 1); each is ended after the test."""
    made: list[str] = []

    def make() -> str:
        status, body = service.request("POST", "/frames", {"url": f"{web_pages}/tabui.html", "width": CSS_W,
                                                            "height": CSS_H, "dpr": 1})
        assert status == 201, body
        made.append(str(body["id"]))
        return str(body["id"])

    yield make
    for frame in made:
        with contextlib.suppress(OSError):
            service.request("DELETE", f"/frames/{frame}")


# -- helpers -----------------------------------------------------------------------------------------------------

def in_view(frame: str, selector: str = "") -> str:
    """JS for the frame's view element, or the first element matching `selector` inside it."""
    view = f"document.querySelector('.fs-frame[data-frame=\"{frame}\"]')"
    return f"{view}.querySelector({json.dumps(selector)})" if selector else view


def count(frame: str, selector: str) -> str:
    return f"{in_view(frame)}.querySelectorAll({json.dumps(selector)}).length"


async def click_css(page: Page, frame: str, css: tuple[int, int]) -> None:
    """A real click on the frame's canvas at its CSS point."""
    x, y = await page.eval(JS_CANVAS_POINT.format(frame=frame, fx=css[0] / CSS_W, fy=css[1] / CSS_H))
    await page.click(x, y)


async def click_element(page: Page, element: str) -> None:
    """A real click in the middle of a viewer element (`element`: JS giving it), once it is there."""
    await page.wait_for(f"(() => {{ const e = {element};"
                        " return e && !e.disabled && e.getClientRects().length > 0; })()")
    x, y = await page.eval(f"(() => {{ const r = ({element}).getBoundingClientRect();"
                           " return [r.left + r.width / 2, r.top + r.height / 2]; })()")
    await page.click(x, y)


async def idle_input(page: Page) -> None:
    await page.wait_for("window.framestream.client.inputInFlight === 0", within=15)


async def wait_dialog(page: Page, frame: str, kind: str) -> dict[str, Any]:
    """Wait until the view shows a dialog of `kind`; what it shows."""
    box = in_view(frame, f".fs-modal .fs-dialog[data-kind={kind}]")
    await page.wait_for(f"{box} && !{in_view(frame, '.fs-modal')}.hidden")
    return await page.eval(f"""(() => {{ const b = {box};
      const text = b.querySelector('.fs-dialog-text');
      return {{ id: b.dataset.id, message: b.querySelector('.fs-dialog-message').textContent,
        buttons: [...b.querySelectorAll('button')].map((x) => x.textContent),
        text: text ? text.value : null, focused: document.activeElement === text,
        note: b.querySelector('.fs-dialog-note')?.textContent ?? null }}; }})()""")  # type: ignore[no-any-return]


async def modal_gone(page: Page, frame: str) -> None:
    await page.wait_for(f"{in_view(frame, '.fs-modal')}.hidden && !{in_view(frame, '.fs-modal .fs-dialog')}")


async def pick_files(page: Page, frame: str, paths: list[Path]) -> None:
    """Set files on the viewer's own <input type=file> for the frame's file chooser, as a person picking them."""
    doc = await page.send("DOM.getDocument", {"depth": 0})
    node = await page.send("DOM.querySelector", {
        "nodeId": doc["root"]["nodeId"], "selector": f'.fs-frame[data-frame="{frame}"] .fs-chooser .fs-file-input'})
    assert node["nodeId"], "no file input in the viewer"
    await page.send("DOM.setFileInputFiles", {"nodeId": node["nodeId"], "files": [str(p) for p in paths]})


async def paste(page: Page, text: str) -> None:
    """The viewer's user pastes `text` with Ctrl+V: the viewer's browser clipboard holds it, and the key runs the
    browser's own paste command (as a person's Ctrl+V does), so the viewer gets a real `paste` event."""
    held = await page.eval(f"navigator.clipboard.writeText({json.dumps(text)}).then(() => true, (e) => String(e))",
                           within=10)
    assert held is True, f"the viewer's browser refused its clipboard: {held}"
    await page.send("Input.dispatchKeyEvent", {"type": "rawKeyDown", "key": "v", "code": "KeyV",
                                               "windowsVirtualKeyCode": 86, "modifiers": 2, "commands": ["paste"]})
    await page.send("Input.dispatchKeyEvent", {"type": "keyUp", "key": "v", "code": "KeyV",
                                               "windowsVirtualKeyCode": 86, "modifiers": 2})


# -- tests -------------------------------------------------------------------------------------------------------

async def test_driver_answers_confirm_and_prompt_in_the_viewer(service: Service, page: Page,
                                                               make_frame: Callable[[], str]) -> None:
    frame = make_frame()
    await open_viewer(page, service.base, service.token("drive", subject="ana"), [frame])
    await wait_pixel(page, frame, CONFIRM, RED)

    # The page calls confirm() on click: the viewer shows it over the canvas with OK and Cancel.
    await click_css(page, frame, CONFIRM)
    shown = await wait_dialog(page, frame, "confirm")
    assert shown["message"] == "Go green?" and shown["buttons"] == ["OK", "Cancel"], shown
    assert await page.eval(f"{in_view(frame, '.fs-modal')}.dataset.drive === ''")
    await click_element(page, in_view(frame, ".fs-dialog-ok"))
    got = await wait_pixel(page, frame, CONFIRM, GREEN)
    await modal_gone(page, frame)
    print(f"confirm answered OK in the viewer: zone {got}")

    # prompt(): a text field prefilled with the page's default, focused; typing and Enter answer it.
    await click_css(page, frame, PROMPT)
    shown = await wait_dialog(page, frame, "prompt")
    assert shown["message"] == "Your name?" and shown["text"] == "Ana" and shown["focused"], shown
    await page.send("Input.insertText", {"text": "Bo"})  # replaces the selected default
    await page.key("Enter", "Enter", "\r", 13)
    await wait_pixel(page, frame, PROMPT, PURPLE)
    await modal_gone(page, frame)

    # The frame still takes input, and Cancel is an answer too.
    await click_css(page, frame, CONFIRM)
    await wait_dialog(page, frame, "confirm")
    await click_element(page, in_view(frame, ".fs-dialog-cancel"))
    await wait_pixel(page, frame, CONFIRM, BLUE)
    await modal_gone(page, frame)
    await idle_input(page)


async def test_view_only_viewer_sees_the_dialog_and_pages_without_controls(service: Service, page: Page,
                                                                           make_frame: Callable[[], str]) -> None:
    frame = make_frame()
    await open_viewer(page, service.base, service.token("view", subject="watcher"), [frame])
    await wait_pixel(page, frame, CONFIRM, RED)
    await page.wait_for(f"{count(frame, '.fs-tab')} === 1")
    assert await page.eval(f"{in_view(frame, '.fs-tab-label')}.tagName") == "SPAN"
    assert await page.eval(f"{count(frame, '.fs-nav, .fs-tab-close, .fs-tab-reload, button.fs-tab-label')}") == 0

    # Someone else drives: a second client in the same page with a drive grant clicks the confirm zone.
    drive = service.token("drive", subject="ana")
    await page.eval(f"""(async () => {{
      const m = await import('./web/framestream.js');
      window.driver = m.connect({{ token: {json.dumps(drive)} }});
      return true; }})()""")
    await page.wait_for("window.driver.state === 'open'")
    down = {"kind": "mouse", "action": "down", "x": CONFIRM[0], "y": CONFIRM[1], "button": "left", "buttons": 1,
            "clicks": 1, "modifiers": 0}
    up = {**down, "action": "up", "buttons": 0}
    await page.eval(f"window.driver.sendInput({json.dumps(frame)}, {json.dumps([down, up])})")

    # The view-only viewer sees the question, but has nothing to answer it with.
    shown = await wait_dialog(page, frame, "confirm")
    assert shown["message"] == "Go green?" and shown["buttons"] == [], shown
    assert shown["note"] == "Waiting for the driver to answer."
    assert await page.eval(f"{count(frame, '.fs-modal input, .fs-modal button')}") == 0
    assert await page.eval(f"{in_view(frame, '.fs-modal')}.dataset.drive === undefined")
    assert await page.eval("window.framestream.client.seq") == 0  # it sent nothing

    # The driver answers: the page goes on, and the dialog leaves the view-only viewer too.
    await page.eval(f"window.driver.sendStep({json.dumps(frame)}, 'dialog-answer',"
                    f" {{ id: {json.dumps(shown['id'])}, accept: true }})")
    await wait_pixel(page, frame, CONFIRM, GREEN)
    await modal_gone(page, frame)
    await page.wait_for("window.driver.inputInFlight === 0")
    await page.eval("window.driver.close()")
    # The tab is labelled with the page's <title>, once the service reports it in frame-state's pages.
    label = f"{in_view(frame, '.fs-tab[data-active] .fs-tab-label')}.textContent"
    try:
        await page.wait_for(f"{label} === 'Tab test'")
    except TimeoutError as exc:
        pages = await page.eval(f"JSON.stringify(window.framestream.client.tab({json.dumps(frame)}).pages)")
        raise AssertionError(f"the tab says {await page.eval(label)!r}; the service's pages: {pages}") from exc


async def test_driver_picks_a_file_in_the_viewer_and_the_page_gets_it(service: Service, page: Page,
                                                                     make_frame: Callable[[], str],
                                                                     tmp_path: Path) -> None:
    frame = make_frame()
    await open_viewer(page, service.base, service.token("drive", subject="ana"), [frame])
    await wait_pixel(page, frame, FILEZONE, RED)

    # The page's <input type=file multiple accept=".bin,.dat"> is clicked: the viewer offers its own picker.
    await click_css(page, frame, FILEZONE)
    chooser = in_view(frame, ".fs-chooser")
    await page.wait_for(f"!!{chooser}")
    picker = await page.eval(f"(() => {{ const i = {chooser}.querySelector('.fs-file-input');"
                             " return [i.type, i.multiple, i.accept]; })()")
    assert picker == ["file", True, ".bin,.dat"], picker
    first = tmp_path / "first.bin"
    first.write_bytes(bytes([200, 1, 2, 3]))
    await pick_files(page, frame, [first])
    got = await wait_pixel(page, frame, FILEZONE, (200, 55, 128))  # rgb(b, 255-b, 128) of the first byte
    await page.wait_for(f"!{chooser} && {in_view(frame, '.fs-modal')}.hidden")
    print(f"file picked in the viewer: zone {got}")

    # Cancel in the viewer closes the page's chooser; a later chooser still takes files.
    await click_css(page, frame, FILEZONE)
    await page.wait_for(f"!!{chooser}")
    await click_element(page, f"{chooser}.querySelector('.fs-chooser-cancel')")
    await page.wait_for(f"!{chooser} && {in_view(frame, '.fs-modal')}.hidden")
    await click_css(page, frame, FILEZONE)
    await page.wait_for(f"!!{chooser}")
    second = tmp_path / "second.dat"
    second.write_bytes(bytes([40]))
    await pick_files(page, frame, [second])
    await wait_pixel(page, frame, FILEZONE, (40, 215, 128))
    await page.wait_for(f"!{chooser}")
    await idle_input(page)


async def test_pages_as_tabs_and_the_navigation_bar(service: Service, page: Page, web_pages: str,
                                                    make_frame: Callable[[], str]) -> None:
    frame = make_frame()
    await open_viewer(page, service.base, service.token("drive", subject="ana"), [frame])
    await wait_pixel(page, frame, BLANK, WHITE)
    await page.wait_for(f"{in_view(frame, '.fs-address')}.value === {json.dumps(f'{web_pages}/tabui.html')}")

    # A link with target=_blank opens a second page: two tabs, the new one active and streamed.
    await click_css(page, frame, NEWTAB)
    await page.wait_for(f"{count(frame, '.fs-tab')} === 2")
    await wait_pixel(page, frame, BLANK, BLUE)
    tabs = await page.eval(f"[...{in_view(frame)}.querySelectorAll('.fs-tab')].map((t) => t.dataset.page)")
    active = f"{in_view(frame, '.fs-tab[data-active]')}.dataset.page"
    await page.wait_for(f"{active} === {json.dumps(tabs[1])}")
    # Each tab is labelled with its page's title (its URL while it has none), as the service reports it.
    labels, reported = await page.eval(f"""[
      [...{in_view(frame)}.querySelectorAll('.fs-tab-label')].map((l) => l.textContent),
      window.framestream.client.tab({json.dumps(frame)}).pages.map((p) => p.title.trim() || p.url || 'new page')]""")
    assert labels == reported, (labels, reported)
    assert await page.eval(f"{in_view(frame, '.fs-tab-label')}.title") == f"{web_pages}/tabui.html"

    # Clicking the first tab activates it; its close button closes the other page.
    await click_element(page, f"{in_view(frame)}.querySelector('.fs-tab[data-page=\"{tabs[0]}\"] .fs-tab-label')")
    await wait_pixel(page, frame, BLANK, WHITE)
    await wait_pixel(page, frame, CONFIRM, RED)
    await page.wait_for(f"{active} === {json.dumps(tabs[0])}")
    await click_element(page, f"{in_view(frame)}.querySelector('.fs-tab[data-page=\"{tabs[1]}\"] .fs-tab-close')")
    await page.wait_for(f"{count(frame, '.fs-tab')} === 1")

    # The address field: type a URL and press Enter.
    await click_element(page, in_view(frame, ".fs-address"))
    await page.eval(f"{in_view(frame, '.fs-address')}.select()")
    await page.send("Input.insertText", {"text": f"{web_pages}/page2.html"})
    await page.key("Enter", "Enter", "\r", 13)
    await wait_pixel(page, frame, BLANK, BLUE)
    await page.wait_for(f"{in_view(frame, '.fs-address')}.value === {json.dumps(f'{web_pages}/page2.html')}")

    # Back, forward and reload.
    await click_element(page, in_view(frame, ".fs-back"))
    await wait_pixel(page, frame, BLANK, WHITE)
    await wait_pixel(page, frame, CONFIRM, RED)
    await page.wait_for(f"{in_view(frame, '.fs-address')}.value === {json.dumps(f'{web_pages}/tabui.html')}")
    await click_element(page, in_view(frame, ".fs-forward"))
    await wait_pixel(page, frame, BLANK, BLUE)
    await click_element(page, in_view(frame, ".fs-back"))
    await wait_pixel(page, frame, CONFIRM, RED)
    await click_css(page, frame, CONFIRM)  # the page changes (a dialog answered) and reload brings it back
    await wait_dialog(page, frame, "confirm")
    await click_element(page, in_view(frame, ".fs-dialog-ok"))
    await wait_pixel(page, frame, CONFIRM, GREEN)
    await click_element(page, in_view(frame, ".fs-reload"))
    await wait_pixel(page, frame, CONFIRM, RED)
    await idle_input(page)


async def test_a_download_is_listed_and_saved_through_the_viewer(service: Service, page: Page, tmp_path: Path,
                                                                 make_frame: Callable[[], str]) -> None:
    frame = make_frame()
    await open_viewer(page, service.base, service.token("drive", subject="ana"), [frame])
    await wait_pixel(page, frame, DOWNLOAD, BLUE)
    # Where the viewer's own browser saves what the viewer offers.
    saved = tmp_path / "saved"
    saved.mkdir()
    await page.send("Page.setDownloadBehavior", {"behavior": "allow", "downloadPath": str(saved)})

    await click_css(page, frame, DOWNLOAD)
    row = in_view(frame, ".fs-download[data-state=done]")
    await page.wait_for(f"!!{row}", within=30)
    want = (PAGES_DIR / "download.bin").read_bytes()
    assert await page.eval(f"{row}.querySelector('.fs-download-name').textContent") == "download.bin"
    await click_element(page, f"{row}.querySelector('.fs-download-save')")
    link = f"{row}.querySelector('.fs-download-link')"
    await page.wait_for(f"{link} && {link}.href.startsWith('blob:')")
    assert await page.eval(f"{link}.download") == "download.bin"
    got = await page.eval(f"fetch({link}.href).then((r) => r.arrayBuffer()).then((b) => [...new Uint8Array(b)])")
    assert bytes(got) == want
    # ... and the viewer's browser saved the same bytes as a file.
    for _ in range(200):
        if (saved / "download.bin").is_file() and (saved / "download.bin").read_bytes() == want:
            break
        await asyncio.sleep(0.05)
    assert (saved / "download.bin").read_bytes() == want


async def test_copied_text_reaches_the_viewer_and_a_paste_reaches_the_page(service: Service, page: Page,
                                                                           make_frame: Callable[[], str]) -> None:
    frame = make_frame()
    await open_viewer(page, service.base, service.token("drive", subject="ana"), [frame])
    await wait_pixel(page, frame, COPY, RED)

    # The page copies text: the viewer puts it in its user's clipboard where allowed, and shows it anyway.
    await click_css(page, frame, COPY)
    clip = in_view(frame, ".fs-clipboard")
    await page.wait_for(f"!{clip}.hidden")
    assert await page.eval(f"{clip}.querySelector('.fs-clipboard-preview').textContent") == "copied from the page"
    written = await page.eval(f"{clip}.dataset.copied")
    assert written in ("yes", "no")
    if written == "no":
        assert await page.eval(f"{clip}.querySelector('.fs-clipboard-text').value") == "copied from the page"
    print(f"copied text written to the viewer's clipboard: {written}")

    # The user pastes while the frame has the keyboard: the page gets a real paste event with the text.
    await click_css(page, frame, PASTE)
    await idle_input(page)
    assert await page.eval("document.activeElement.className") == "fs-input-sink"
    await paste(page, "pasted from the viewer")
    await wait_pixel(page, frame, PASTEFLAG, GREEN)
    await idle_input(page)


async def test_a_copy_the_person_did_not_make_is_shown_but_never_written_to_their_clipboard(
        service: Service, page: Page, make_frame: Callable[[], str]) -> None:
    """Issue 32, #6: the web viewer wrote every copied text into its person's clipboard, even copies a page made
    on its own. Now only right after the person's own gesture in the viewer; otherwise it is shown to copy by
    hand. Here an agent's step (HTTP input) makes the page copy while the person has not acted for a while."""
    frame = make_frame()
    # The viewer's browser would let it write without a gesture (as a browser with the permission granted does).
    await page.send("Browser.grantPermissions", {"origin": service.base,
                                                 "permissions": ["clipboardReadWrite", "clipboardSanitizedWrite"]})
    await page.send("Emulation.setFocusEmulationEnabled", {"enabled": True})  # (writing needs a focused page)
    await open_viewer(page, service.base, service.token("drive", subject="ana"), [frame])
    await wait_pixel(page, frame, COPY, RED)
    assert await page.eval("navigator.clipboard.writeText('probe').then(() => true, () => false)"), \
        "this test needs a viewer browser that lets the page write to the clipboard"
    await page.wait_for("navigator.userActivation && !navigator.userActivation.isActive", within=30)
    click = {"seq": 1, "events": [{"kind": "mouse", "action": "down", "x": COPY[0], "y": COPY[1], "button": "left"},
                                  {"kind": "mouse", "action": "up", "x": COPY[0], "y": COPY[1], "button": "left"}]}
    agent = service.token("drive", frame=frame, subject="agent", ttl=30, step=True)
    status, body = await asyncio.to_thread(service.request, "POST", f"/frames/{frame}/input", click, agent)
    assert status == 200, body
    clip = in_view(frame, ".fs-clipboard")
    await page.wait_for(f"!{clip}.hidden")
    assert await page.eval(f"{clip}.dataset.copied") == "no", "written to the person's clipboard without a gesture"
    assert await page.eval(f"{clip}.querySelector('.fs-clipboard-text').value") == "copied from the page"


async def test_files_dragged_onto_the_canvas_are_dropped_on_the_page(service: Service, page: Page, pages: str,
                                                                    tmp_path: Path) -> None:
    """A real drag of files from the desktop onto the driver's canvas (Chromium's own, through DevTools with real
    files): tests/pages/drop.html's zone gets them and its bar turns green. A viewer that only watches takes the
    drop and says why nothing reached the page."""
    status, body = service.request("POST", "/frames", {"url": f"{pages}/drop.html", "width": CSS_W,
                                                        "height": CSS_H, "dpr": 1})
    assert status == 201, body
    frame = str(body["id"])
    try:
        await open_viewer(page, service.base, service.token("drive", subject="ana"), [frame])
        bar = (320, 360)
        await wait_pixel(page, frame, bar, (128, 128, 128))
        hello = tmp_path / "hello.txt"
        hello.write_text("hello from the desktop\n")
        blue = tmp_path / "blue.png"
        blue.write_bytes(rgb_to_png(np.full((1, 1, 3), (40, 60, 220), np.uint8)))
        x, y = await page.eval(JS_CANVAS_POINT.format(frame=frame, fx=400 / CSS_W, fy=140 / CSS_H))
        data = {"items": [], "files": [str(hello), str(blue)], "dragOperationsMask": 1}
        for kind in ("dragEnter", "dragOver"):
            await page.send("Input.dispatchDragEvent", {"type": kind, "x": x, "y": y, "data": data})
        assert await page.eval(f"document.querySelector('canvas[data-frame=\"{frame}\"]')"
                               ".hasAttribute('data-dropping')") is True  # the canvas says it takes them
        await page.send("Input.dispatchDragEvent", {"type": "drop", "x": x, "y": y, "data": data})
        await wait_pixel(page, frame, bar, (30, 180, 60))
        assert await page.eval(f"document.querySelector('canvas[data-frame=\"{frame}\"]')"
                               ".hasAttribute('data-dropping')") is False
        # A viewer that only watches: the drop is taken (its browser does not open the file in place of the view)
        # and it says why nothing reached the page.
        await open_viewer(page, service.base, service.token("view", subject="bo"), [frame])
        await wait_pixel(page, frame, bar, (30, 180, 60))
        viewer_url = await page.eval("location.href")
        for kind in ("dragEnter", "dragOver", "drop"):
            await page.send("Input.dispatchDragEvent", {"type": kind, "x": x, "y": y, "data": data})
        toast = in_view(frame, ".fs-toast")
        await page.wait_for(f"!{toast}.hidden && {toast}.textContent.includes('only the driver can drop files')")
        assert await page.eval("location.href") == viewer_url
        # Beside the canvas (the page's header) the demo page takes a drag of files too: a desktop browser opens an
        # untaken drop in place of the page (headless Chromium does not, so the events are read: taken means their
        # default, the opening, is cancelled). Text dragged within the page is left alone.
        taken = await page.eval("""(() => {
            const files = new DataTransfer(), text = new DataTransfer(), header = document.querySelector('header');
            files.items.add(new File(['x'], 'x.txt'));
            text.setData('text/plain', 'x');
            const sent = (type, dataTransfer) => {
                const e = new DragEvent(type, {bubbles: true, cancelable: true, dataTransfer});
                header.dispatchEvent(e);
                return e.defaultPrevented;
            };
            return [sent('dragover', files), sent('drop', files), sent('dragover', text), sent('drop', text)];
        })()""")
        assert taken == [True, True, False, False], taken
        assert not page.exceptions, page.exceptions
    finally:
        service.request("DELETE", f"/frames/{frame}?purge=1")
