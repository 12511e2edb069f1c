"""`framestream mcp`: the computer-use tools as a Model Context Protocol server (the official `mcp` SDK).

stdio by default; streamable HTTP with `--http`. The sandbox key comes from TERMINAL_AUTH_SECRET and SANDBOX_ID
(or a key file) and stays in this process: tools mint a grant per step and never show one.
"""

from __future__ import annotations

import base64
import mimetypes
import os
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, Literal

from mcp.server.mcpserver import MCPServer
from mcp.types import BlobResourceContents, EmbeddedResource

from framestream.client import Client, Download, SandboxKey
from framestream.mcp.content import Content, run, step_content
from framestream.mcp.page_tools import add_page_tools
from framestream.mcp.replay_tools import add_replay_tools
from framestream.mcp.tools import ComputerTools

__all__ = ["build_server", "load_key"]

INSTRUCTIONS = (
    "Tools to see and drive live browser pages (frames). Coordinates are CSS pixels of the frame, as in the "
    "screenshot. Name a frame with `frame` (optional when there is one). Each action returns the picture after "
    "the page settled unless screenshot=false, and says what the picture cannot show: a dialog the page opened "
    "(answer_dialog), a file chooser (choose_files), a new tab or popup (list_pages, switch_page, close_page); "
    "screenshot says so of an open dialog or file chooser. "
    "A person may take over a frame at any time: then actions answer so, and you should not retry. When you need "
    "a person (a login, a CAPTCHA, a payment, a choice only they can make), call ask_human with the reason: it "
    "returns their note once they hand the frame back."
)


def load_key(*, key_file: str | None, sandbox: str | None, subject: str) -> SandboxKey:
    """The sandbox key: the secret from `key_file` (its first line) or TERMINAL_AUTH_SECRET; the sandbox id
    from `sandbox` or SANDBOX_ID (default `local`)."""
    if key_file:
        secret = Path(key_file).read_text().strip().splitlines()[0].strip()
    else:
        secret = os.environ.pop("TERMINAL_AUTH_SECRET", "")  # held by the key from now on, not the environment
    if not secret:
        raise ValueError("no key: set TERMINAL_AUTH_SECRET or pass --key-file")
    return SandboxKey(secret, sandbox or os.environ.get("SANDBOX_ID", "local"), subject=subject)


def _file(frame: str, download: Download, data: bytes) -> list[str | EmbeddedResource]:
    """A download for a model: its text when it is UTF-8 text (a CSV, JSON), else the file itself (a PDF, an
    image) with its media type."""
    said = f"{download.name} ({download.size} bytes)"
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        text = None
    if text is not None and "\0" not in text:
        return [said, text]
    kind = mimetypes.guess_type(download.name)[0] or "application/octet-stream"
    uri = f"framestream://frames/{frame}/downloads/{download.id}"
    return [said, EmbeddedResource(type="resource", resource=BlobResourceContents(
        uri=uri, mime_type=kind, blob=base64.b64encode(data).decode()))]


def build_server(url: str, key: SandboxKey, *, control: bool = True, settle_ms: int = 300) -> MCPServer[Any]:
    """The MCP server with its tools, reaching framestream at `url`."""
    tools = ComputerTools(url, key, settle_ms=settle_ms)

    @asynccontextmanager
    async def lifespan(_: MCPServer[Any]) -> AsyncIterator[None]:
        try:
            yield
        finally:
            await tools.close()

    server: MCPServer[Any] = MCPServer("framestream", instructions=INSTRUCTIONS, lifespan=lifespan)

    async def act(frame: str | None, what: str, send: Callable[[Client, str], Awaitable[object]],
                  screenshot: bool) -> Content:
        return step_content(await run(tools.step(frame, what, send, screenshot)))

    @server.tool(structured_output=False)
    async def list_frames() -> str:
        """The frames of this sandbox: id, url, state, CSS width and height, dpr, and who drives."""
        result: str = await run(tools.list_frames())
        return result

    @server.tool(structured_output=False)
    async def screenshot(frame: str | None = None) -> Content:
        """The frame's current picture as PNG, in CSS pixels (the coordinates every action uses), after a sentence
        when a dialog or file chooser is open (neither is drawn in the page)."""
        return step_content(await run(tools.screenshot(frame)))

    @server.tool(structured_output=False)
    async def click(x: float, y: float, frame: str | None = None,
                    button: Literal["left", "right", "middle"] = "left", screenshot: bool = True) -> Content:
        """Click at (x, y) in CSS pixels."""
        return await act(frame, f"click at ({x:g}, {y:g})",
                         lambda c, f: c.click(f, x, y, button=button), screenshot)

    @server.tool(structured_output=False)
    async def double_click(x: float, y: float, frame: str | None = None, screenshot: bool = True) -> Content:
        """Double-click at (x, y) in CSS pixels."""
        return await act(frame, f"double click at ({x:g}, {y:g})", lambda c, f: c.double_click(f, x, y), screenshot)

    @server.tool(structured_output=False)
    async def move(x: float, y: float, frame: str | None = None, screenshot: bool = True) -> Content:
        """Move the mouse to (x, y) in CSS pixels (hover)."""
        return await act(frame, f"move to ({x:g}, {y:g})", lambda c, f: c.move(f, x, y), screenshot)

    @server.tool(structured_output=False)
    async def drag(  # noqa: PLR0917 - a tool's arguments come by name from the model
            x: float, y: float, to_x: float, to_y: float, frame: str | None = None, screenshot: bool = True,
    ) -> Content:
        """Press at (x, y), move to (to_x, to_y) and release there (CSS pixels)."""
        return await act(frame, f"drag from ({x:g}, {y:g}) to ({to_x:g}, {to_y:g})",
                         lambda c, f: c.drag(f, x, y, to_x, to_y), screenshot)

    @server.tool(structured_output=False)
    async def scroll(  # noqa: PLR0917 - a tool's arguments come by name from the model
            x: float, y: float, dx: float = 0, dy: float = 0, frame: str | None = None, screenshot: bool = True,
    ) -> Content:
        """Scroll with the wheel at (x, y): dy > 0 scrolls down, dx > 0 right, in CSS pixels."""
        return await act(frame, f"scroll by ({dx:g}, {dy:g})", lambda c, f: c.scroll(f, x, y, dx, dy), screenshot)

    @server.tool(structured_output=False)
    async def type_text(text: str, frame: str | None = None, screenshot: bool = True) -> Content:
        """Type text where the focus is (click a field first)."""
        return await act(frame, f"typed {len(text)} characters", lambda c, f: c.type_text(f, text), screenshot)

    @server.tool(structured_output=False)
    async def press(keys: str, frame: str | None = None, screenshot: bool = True) -> Content:
        """Press a key or chord: "Enter", "Tab", "Escape", "Backspace", "ArrowDown", "Control+A", "Shift+Tab"."""
        return await act(frame, f"pressed {keys}", lambda c, f: c.press(f, keys), screenshot)

    @server.tool(structured_output=False)
    async def navigate(url: str | None = None, action: Literal["back", "forward", "reload"] | None = None,
                       frame: str | None = None, screenshot: bool = True) -> Content:
        """Load `url` in the frame, or go back, forward or reload (`action`)."""
        return await act(frame, f"navigated to {url or action}", lambda c, f: c.navigate(f, url, action=action),
                         screenshot)

    @server.tool(structured_output=False)
    async def ask_human(reason: str, frame: str | None = None, timeout_s: float = 300.0) -> str:
        """Ask a person watching the frame to take it over (a login, a CAPTCHA, a payment), and wait until they
        hand it back: returns their note, or says that nobody came within timeout_s (1 to 3600)."""
        result: str = await run(tools.ask_human(frame, reason, max(1.0, min(3600.0, timeout_s))))
        return result

    @server.tool(structured_output=False)
    async def wait_for_settle(frame: str | None = None, quiet_ms: int = 300, timeout_s: float = 10.0,
                              screenshot: bool = True) -> Content:
        """Wait until the page has not changed for `quiet_ms`; then its picture."""
        return step_content(await run(tools.wait_for_settle(frame, quiet_ms, timeout_s, screenshot)))

    @server.tool(structured_output=False)
    async def choose_files(paths: list[str], frame: str | None = None, screenshot: bool = True) -> Content:
        """Answer the page's open file chooser with files of this sandbox (their paths), as a person picking them.
        A chooser opens when you click a file input or an upload button: that action's answer says so."""
        return step_content(await run(tools.choose_files(frame, paths, screenshot)))

    @server.tool(structured_output=False)
    async def drop_files(paths: list[str], x: float, y: float, frame: str | None = None,
                         screenshot: bool = True) -> Content:
        """Drop files of this sandbox (their paths) on the page at (x, y), as a person's drag from their desktop:
        for drop zones ("drag files here")."""
        return step_content(await run(tools.drop_files(frame, x, y, paths, screenshot)))

    @server.tool(structured_output=False)
    async def list_downloads(frame: str | None = None) -> str:
        """Files the frame's pages downloaded, and what they printed (each print is a PDF): download id, name, size
        in bytes and state (started, done, failed), oldest first."""
        result: str = await run(tools.list_downloads(frame))
        return result

    @server.tool(structured_output=False)
    async def read_download(download: str, frame: str | None = None) -> list[str | EmbeddedResource]:
        """A finished download (its id from list_downloads): its text when it is text (CSV, JSON), else the file
        itself (a PDF, an image)."""
        frame_id, found, data = await run(tools.read_download(frame, download))
        return _file(frame_id, found, data)

    add_page_tools(server, tools)  # pages and dialogs (framestream/mcp/page_tools.py)
    add_replay_tools(server, tools)  # (framestream/mcp/replay_tools.py)

    if control:
        @server.tool(structured_output=False)
        async def open_frame(url: str, width: int = 1280, height: int = 800, dpr: int | None = None) -> str:
            """Open a new frame (a live browser page) at `url`, `width` x `height` CSS pixels."""
            result: str = await run(tools.open_frame(url, width, height, dpr))
            return result

        @server.tool(structured_output=False)
        async def resize_frame(width: int, height: int, dpr: int | None = None, frame: str | None = None,
                               screenshot: bool = True) -> Content:
            """Give the frame a new size in CSS pixels (a phone's 390x844, a tablet's 820x1180) to see its layout
            there; dpr 1 or 2 (2 unless given). The page keeps its state unless the dpr changes (then it loads again
            at its URL)."""
            return step_content(await run(tools.resize_frame(frame, width, height, dpr, screenshot)))

        @server.tool(structured_output=False)
        async def close_frame(frame: str) -> str:
            """Close a frame (its browser stops)."""
            result: str = await run(tools.close_frame(frame))
            return result

    return server
