"""The MCP tools for a frame's pages (tabs, popups) and its pages' dialogs (framestream/mcp/page_news.py says
when they open)."""

from __future__ import annotations

from typing import Any

from mcp.server.mcpserver import MCPServer

from framestream.mcp.content import Content, run, step_content
from framestream.mcp.tools import ComputerTools, PageAction

__all__ = ["add_page_tools"]


def add_page_tools(server: MCPServer[Any], tools: ComputerTools) -> None:
    @server.tool(structured_output=False)
    async def answer_dialog(accept: bool = True, text: str | None = None, frame: str | None = None,
                            screenshot: bool = True) -> Content:
        """Answer the page's open dialog (alert, confirm, prompt, or "leave this page?"): accept true is OK, false
        Cancel; `text` is a prompt's answer. An action that opened one says so; until it is answered the page takes
        no other step."""
        return step_content(await run(tools.answer_dialog(frame, accept, text, screenshot)))

    @server.tool(structured_output=False)
    async def list_pages(frame: str | None = None) -> str:
        """The frame's pages (tabs and popups) as JSON: page id, url, title, active (the one shown and driven) and
        responsive (false: its script never returns; reload_page)."""
        result: str = await run(tools.list_pages(frame))
        return result

    async def act(frame: str | None, action: PageAction, page: str | None, screenshot: bool) -> Content:
        return step_content(await run(tools.page_action(frame, action, page, screenshot)))

    @server.tool(structured_output=False)
    async def switch_page(page: str, frame: str | None = None, screenshot: bool = True) -> Content:
        """Show one of the frame's pages (its id from list_pages): the one every action then goes to."""
        return await act(frame, "activate", page, screenshot)

    @server.tool(structured_output=False)
    async def close_page(page: str, frame: str | None = None, screenshot: bool = True) -> Content:
        """Close one of the frame's pages (a tab or popup a link opened); the frame's last page stays."""
        return await act(frame, "close", page, screenshot)

    @server.tool(structured_output=False)
    async def reload_page(page: str | None = None, frame: str | None = None, screenshot: bool = True) -> Content:
        """Reload a page (default: the one shown), ending a script that never returns first."""
        return await act(frame, "reload", page, screenshot)
