"""What the MCP tools hand the SDK: a step's sentence and picture as content, a refusal as the SDK's tool error."""

from __future__ import annotations

from collections.abc import Awaitable
from typing import Any

from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.mcpserver.utilities.types import Image

from framestream.mcp.tools import StepOutcome, ToolRefusal

__all__ = ["Content", "run", "step_content"]

Content = list[str | Image]


def step_content(outcome: StepOutcome) -> Content:
    """The sentence (none when empty: a screenshot with nothing to say) and the picture, when there is one."""
    text: Content = [outcome.text] if outcome.text else []
    return text if outcome.png is None else [*text, Image(data=outcome.png, format="png")]


async def run(action: Awaitable[Any]) -> Any:
    """The tool's result, or its refusal as the error result the model reads."""
    try:
        return await action
    except ToolRefusal as exc:
        raise ToolError(str(exc)) from None
