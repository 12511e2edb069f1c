"""Reading one field of a decoded client message, with the contract's types and bounds.

A field that fails raises `FieldError` with a message naming where it is; the message parser turns it into the
one `ProtocolError` the edge answers with (`refused_as`), carrying the message's `seq` and `frame` when known.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from framestream.core.errors import ProtocolError
from framestream.core.wire._limits import MAX_ID_CHARS, MAX_SEQ, MAX_TOKEN_CHARS


class FieldError(Exception):
    """A field failed; turned into a ProtocolError with the right code, seq and frame."""


@contextmanager
def refused_as(code: str, *, seq: int | None = None, frame: str | None = None) -> Iterator[None]:
    """Turn a FieldError raised inside into ProtocolError(code) carrying `seq` and `frame`."""
    try:
        yield
    except FieldError as exc:
        raise ProtocolError(code, str(exc), seq=seq, frame=frame) from None


def _reject_constant(name: str) -> Any:
    # json accepts NaN and Infinity by default; the contract's JSON does not.
    raise ValueError(f"{name} is not valid JSON")


def load_json(text: str | bytes, max_bytes: int) -> Any:
    if isinstance(text, bytes | bytearray | memoryview):
        raise ProtocolError("bad-message", "binary messages are not accepted; send JSON text")
    # A str has at least one byte per character, so the cheap length check catches most oversize text.
    # surrogatepass: a lone surrogate must give a size, not a UnicodeEncodeError.
    if len(text) > max_bytes or len(text.encode("utf-8", "surrogatepass")) > max_bytes:
        raise ProtocolError("bad-message", f"message larger than {max_bytes} bytes")
    try:
        return json.loads(text, parse_constant=_reject_constant)
    except (ValueError, RecursionError) as exc:  # JSONDecodeError is a ValueError; deep nesting recurses
        raise ProtocolError("bad-message", "message is not valid JSON") from exc


def is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def required(obj: Mapping[str, Any], name: str, where: str) -> Any:
    if name not in obj:
        raise FieldError(f"{where}: missing '{name}'")
    return obj[name]


def string(obj: Mapping[str, Any], name: str, where: str, *, max_len: int, min_len: int = 1) -> str:
    value = required(obj, name, where)
    if not isinstance(value, str):
        raise FieldError(f"{where}: '{name}' must be a string")
    if not min_len <= len(value) <= max_len:
        raise FieldError(f"{where}: '{name}' must be {min_len} to {max_len} characters")
    if not value.isascii():
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:  # a lone surrogate from a \ud800 escape: not text anyone typed
            raise FieldError(f"{where}: '{name}' is not valid Unicode text") from None
    return value


def integer(
    obj: Mapping[str, Any], name: str, where: str, lo: int, hi: int, *, default: int | None = None
) -> int:
    if name not in obj and default is not None:
        return default
    value = required(obj, name, where)
    if not isinstance(value, int) or isinstance(value, bool):
        raise FieldError(f"{where}: '{name}' must be an integer")
    if not lo <= value <= hi:
        raise FieldError(f"{where}: '{name}' must be between {lo} and {hi}")
    return value


def number(obj: Mapping[str, Any], name: str, where: str, bound: float = 1e9) -> float:
    value = required(obj, name, where)
    if not is_number(value):
        raise FieldError(f"{where}: '{name}' must be a number")
    try:
        result = float(value)
    except OverflowError:  # an integer too large for a float
        raise FieldError(f"{where}: '{name}' is out of range") from None
    if not math.isfinite(result) or abs(result) > bound:
        raise FieldError(f"{where}: '{name}' must be a finite number within +-{bound:g}")
    return result


def boolean(obj: Mapping[str, Any], name: str, where: str, *, default: bool | None = None) -> bool:
    if name not in obj and default is not None:
        return default
    value = required(obj, name, where)
    if not isinstance(value, bool):
        raise FieldError(f"{where}: '{name}' must be true or false")
    return value


def choice(obj: Mapping[str, Any], name: str, where: str, allowed: tuple[str, ...]) -> str:
    value = required(obj, name, where)
    if not isinstance(value, str) or value not in allowed:
        raise FieldError(f"{where}: '{name}' must be one of {', '.join(allowed)}")
    return value


def seq_of(obj: Mapping[str, Any]) -> int | None:
    """The seq if it is a valid one, so errors can carry it back to the client."""
    value = obj.get("seq")
    if isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= MAX_SEQ:
        return value
    return None


def body_with_seq(obj: object) -> tuple[Mapping[str, Any], int]:
    """A decoded HTTP body, which must be a JSON object with a valid `seq` (`bad-message` otherwise)."""
    if not isinstance(obj, dict):
        raise ProtocolError("bad-message", "body must be a JSON object")
    seq = seq_of(obj)
    if seq is None:
        raise ProtocolError("bad-message", f"'seq' must be an integer between 0 and {MAX_SEQ}")
    return obj, seq


def frame_of(obj: Mapping[str, Any]) -> str | None:
    """The frame field if it is a string a frame id may be, so errors can name it (a longer one is not echoed:
    a client sending 64 KiB ids must not get them back, issue 32, #5)."""
    value = obj.get("frame")
    return value if isinstance(value, str) and 0 < len(value) <= MAX_ID_CHARS else None


def envelope(obj: Mapping[str, Any], where: str) -> tuple[str, str, int]:
    """`frame`, `grant` and `seq` of a driver's message (input, page, navigate, dialog-answer): `bad-message`."""
    with refused_as("bad-message", seq=seq_of(obj), frame=frame_of(obj)):
        frame = string(obj, "frame", where, max_len=MAX_ID_CHARS)
        grant = string(obj, "grant", where, max_len=MAX_TOKEN_CHARS)
        seq = integer(obj, "seq", where, 0, MAX_SEQ)
    return frame, grant, seq
