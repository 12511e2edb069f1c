"""Log formats: the record's own fields (frame ids, connection numbers) in both, JSON that parses."""

from __future__ import annotations

import json
import logging

import pytest

from framestream.service import logs


def record(message: str, **fields: object) -> logging.LogRecord:
    rec = logging.LogRecord("framestream.frames", logging.INFO, __file__, 1, message, (), None)
    rec.__dict__.update(fields)
    return rec


def test_text_lines_show_fields_as_key_value() -> None:
    line = logs.TextFormatter().format(record("live", frame="d604267b", conn=3))
    assert line.endswith(" INFO framestream.frames frame=d604267b conn=3: live")
    assert logs.TextFormatter().format(record("plain")).endswith(" INFO framestream.frames: plain")


def test_json_lines_carry_fields_and_escape_what_would_break_a_line() -> None:
    line = logs.json_formatter().format(record("two\nlines \"quoted\"", frame="abc", code=4401))
    assert "\n" not in line
    data = json.loads(line)
    assert data["message"] == 'two\nlines "quoted"' and data["frame"] == "abc" and data["code"] == 4401
    assert data["level"] == "INFO" and data["logger"] == "framestream.frames" and data["time"].endswith("+00:00")


def test_unknown_format_is_refused() -> None:
    with pytest.raises(ValueError, match="text, json"):
        logs.configure("info", "xml")
