"""framestream: share live browser pages as H.264 over one WebSocket."""

__version__ = "0.1.0"
