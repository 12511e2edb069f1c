"""Log lines for operators: text for people, JSON lines for log pipelines (FRAMESTREAM_LOG_FORMAT=json).

Context travels as `extra` fields on the record (frame ids, connection numbers, close codes), so a pipeline can
filter by frame without parsing messages: `log.info("live", extra={"frame": frame_id})`. Text lines show the
same fields as `key=value` after the logger name. Tokens and page URLs' queries are never put in a record.
"""

from __future__ import annotations

import logging
import sys
from typing import Any

from pythonjsonlogger.core import RESERVED_ATTRS
from pythonjsonlogger.json import JsonFormatter

FORMATS = ("text", "json")
_as_json = False  # set by configure()
_STANDARD = frozenset(RESERVED_ATTRS) | {"message", "asctime"}


def context_of(record: logging.LogRecord) -> dict[str, Any]:
    """The record's own fields (what `extra` added), in the order they were given."""
    return {k: v for k, v in record.__dict__.items() if k not in _STANDARD and not k.startswith("_")}


class TextFormatter(logging.Formatter):
    """`2026-11-30 19:15:39,156 INFO framestream.frames frame=d604267b: live`."""

    def __init__(self) -> None:
        super().__init__("%(asctime)s %(levelname)s %(name)s%(_context)s: %(message)s")

    def format(self, record: logging.LogRecord) -> str:
        record._context = "".join(f" {k}={v}" for k, v in context_of(record).items())
        return super().format(record)


def json_formatter() -> logging.Formatter:
    """One JSON object a line: time (UTC, ISO 8601), level, logger, message, then the record's own fields."""
    return JsonFormatter(["levelname", "name", "message"], timestamp="time",
                         rename_fields={"levelname": "level", "name": "logger"}, reserved_attrs=[*_STANDARD])


def configure(level: str, fmt: str) -> None:
    """Log to stderr at `level` in format `fmt` (text or json); raises ValueError for an unknown one."""
    if fmt not in FORMATS:
        raise ValueError(f"log format must be one of {', '.join(FORMATS)}, not {fmt!r}")
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(json_formatter() if fmt == "json" else TextFormatter())
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(level.upper())
    global _as_json
    _as_json = fmt == "json"


def tell_operator(text: str) -> None:
    """A line for the person who started the service (what to open): plain stdout for text logs, a log record
    when logs are JSON, so a pipeline reading the container's output sees nothing but JSON lines."""
    if _as_json:
        logging.getLogger("framestream").info(text)
    else:
        print(f"framestream: {text}", flush=True)


__all__ = ["FORMATS", "TextFormatter", "configure", "context_of", "json_formatter", "tell_operator"]
