"""The rules for a viewer connection's token: which hello is accepted, which `refresh` may replace the token,
and when the connection stops counting (its token's `exp` plus the skew tokens are given).

Pure: the session (server/session.py) keeps the claims and the deadline, and closes or answers as these say.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from framestream.core.errors import ProtocolError, TokenError
from framestream.core.tokens import CLOCK_SKEW_S, Claims
from framestream.core.wire import CLOSE_FORBIDDEN, CLOSE_UNAUTHORIZED, ClientMessage, Hello


@dataclass(frozen=True, slots=True)
class HelloRefused:
    """Close before `welcome` with `code`; the reason is ours (never the token's text)."""

    code: int
    reason: str


def hello_claims(message: ClientMessage, verify: Callable[[str], Claims]) -> tuple[Hello, Claims] | HelloRefused:
    """The first message's claims, or why the connection closes: it is no hello, its token is refused, or the
    token may not view frames or is a step grant (good for one input message, not for a connection)."""
    if not isinstance(message, Hello):
        return HelloRefused(CLOSE_UNAUTHORIZED, "hello expected first")
    try:
        claims = verify(message.token)
    except TokenError as exc:
        return HelloRefused(CLOSE_UNAUTHORIZED, exc.message)
    if not claims.allows("view", None):
        return HelloRefused(CLOSE_FORBIDDEN, "this token may not view frames")
    if claims.step:
        return HelloRefused(CLOSE_FORBIDDEN, "a step grant is good for one input message, not for a "
                            "connection: say hello with a view, drive or control token")
    return message, claims


def refreshed_claims(old: Claims, token: str, verify: Callable[[str], Claims]) -> Claims:
    """The claims of a newer token for a connection under `old`: same subject, role and frame, a later `exp`.
    Raises ProtocolError when refused (the connection keeps its token)."""
    try:
        claims = verify(token)
    except TokenError as exc:
        raise ProtocolError(exc.code, f"refresh: {exc.message}") from exc
    if claims.step:
        raise ProtocolError("forbidden", "refresh: a step grant is good for one input message only")
    if (claims.sub, claims.role, claims.frm) != (old.sub, old.role, old.frm):
        raise ProtocolError("forbidden", "refresh: the token must name the same subject, role and frame")
    if claims.exp <= old.exp:
        raise ProtocolError("forbidden", "refresh: the token must expire later than the connection's")
    return claims


def token_deadline(claims: Claims, wall_offset: float) -> float:
    """When a connection under `claims` closes, on the clock whose offset to the wall clock is `wall_offset`."""
    return claims.exp + CLOCK_SKEW_S - wall_offset


__all__ = ["HelloRefused", "hello_claims", "refreshed_claims", "token_deadline"]
