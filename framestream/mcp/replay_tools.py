"""The replay tools of `framestream mcp`: what was done on a frame, step by step, and the picture after a step,
both from the frame's recordings (docs/protocol.md, "Recordings"; the service records with FRAMESTREAM_RECORD=on)."""

from __future__ import annotations

import json
from typing import Any

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.mcpserver.utilities.types import Image

from framestream.mcp.content import run
from framestream.mcp.tools import ComputerTools

MAX_STEPS = 100  # the newest, so an answer stays small for the model


def _summary(step: dict[str, Any]) -> dict[str, Any]:
    keep = ("t_us", "end_us", "subject", "role", "step", "kind", "ok", "error", "message", "events", "url",
            "action", "recording")
    return {k: step[k] for k in keep if k in step}


def add_replay_tools(server: MCPServer[Any], tools: ComputerTools) -> None:
    async def steps_of(frame: str | None, since_us: int) -> tuple[str, list[dict[str, Any]]]:
        name: str = await run(tools.resolve(frame))
        found: list[dict[str, Any]] = await run(tools._call(lambda c: c.recordings.steps(name, since_us=since_us),
                                                           name))
        return name, found

    @server.tool(structured_output=False)
    async def recorded_steps(frame: str | None = None, since_us: int = 0) -> str:
        """The steps recorded on a frame since `since_us` (capture-clock µs; 0: all), oldest first: who acted
        (subject), what (events, navigate, dialog-answer...), when (t_us) and how it ended (ok, error). Needs a
        recorded frame. Use a step's t_us with recorded_picture to see what it did."""
        _, found = await steps_of(frame, since_us)
        return json.dumps([_summary(s) for s in found[-MAX_STEPS:]])

    @server.tool(structured_output=False)
    async def recorded_picture(t_us: int, frame: str | None = None, after_s: float = 0.5) -> Image:
        """The recorded picture `after_s` seconds after the step that began at `t_us` (from recorded_steps): what
        the page showed once that step had acted."""
        name, found = await steps_of(frame, 0)
        step = next((s for s in found if int(s.get("t_us", -1)) == int(t_us)), None)
        if step is None:
            raise ToolError(f"no recorded step of frame {name} began at t_us {t_us}: recorded_steps lists them")
        picture = await run(tools._call(lambda c: c.recordings.picture_at_step(
            name, step, after_s=max(0.0, min(60.0, after_s))), name))
        return Image(data=picture.png, format="png")
