"""The wire messages for who drives a frame and how it is handed over (docs/protocol.md, "Handing over")."""

from __future__ import annotations

from framestream.core.wire import agent_pointer, control_message, help_ended, help_requested
from framestream.frames.events import AgentPointer, ControlChanged, FrameEvent, HelpEnded, HelpRequested


def control_text(event: ControlChanged, presenter: int | None) -> str:
    """`control` for the connection `presenter`: `you` only on the one whose grant drives."""
    you = event.presenter is not None and event.presenter == presenter and event.driver is not None
    return control_message(event.frame_id, event.driver, you, kind=event.kind, since_us=event.since_us,
                           held=event.held, note=event.note)


def handoff_event_text(event: FrameEvent, presenter: int | None) -> str | None:
    """The message for a handoff event, as the connection `presenter` is told it; None: not a handoff event."""
    if isinstance(event, ControlChanged):
        return control_text(event, presenter)
    if isinstance(event, HelpRequested):
        return help_requested(event.frame_id, event.id, event.reason, event.subject, event.until_us)
    if isinstance(event, HelpEnded):
        return help_ended(event.frame_id, event.id, event.outcome, note=event.note, by=event.by)
    if isinstance(event, AgentPointer):
        return agent_pointer(event.frame_id, event.x, event.y, event.action, event.subject)
    return None


__all__ = ["control_text", "handoff_event_text"]
