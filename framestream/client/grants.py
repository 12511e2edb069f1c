"""Where tokens come from: a fixed token, a callable that mints one when needed, or a sandbox key.

A step needs a drive grant for its frame. `GrantSource` is either a token used for every step (a person's drive
grant) or a callable `frame -> token` (sync or async) called once per step, so an agent can mint a fresh
one-step grant each time (`SandboxKey.step`). The connection's own token (`hello`, HTTP) is a `TokenSource`:
a token, or a callable minting one, called again on every reconnect so a long-lived client never holds an
expired token.
"""

from __future__ import annotations

import base64
import inspect
import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from framestream.tokens import mint_token

__all__ = ["GrantSource", "SandboxKey", "TokenSource", "expires_at", "grant_for", "token_now"]

TokenSource = str | Callable[[], str]
GrantSource = str | Callable[[str], str] | Callable[[str], Awaitable[str]]


def token_now(source: TokenSource) -> str:
    return source if isinstance(source, str) else source()


def expires_at(token: str) -> float | None:
    """A token's `exp` as it says (not verified: the service does that), None when it cannot be read."""
    payload = token.split(".", 1)[0]
    try:
        claims = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
    except ValueError:
        return None
    exp = claims.get("exp") if isinstance(claims, dict) else None
    return float(exp) if isinstance(exp, int | float) and not isinstance(exp, bool) else None


async def grant_for(source: GrantSource, frame: str) -> str:
    """The grant for one step on `frame`."""
    if isinstance(source, str):
        return source
    grant = source(frame)
    if inspect.isawaitable(grant):
        return await grant
    return grant


@dataclass(frozen=True)
class SandboxKey:
    """The sandbox's secret (TERMINAL_AUTH_SECRET) and id: mints short-lived tokens as they are needed.

    Held by a trusted process (the app, `framestream mcp`), never shown to a model or a page.
    """

    secret: str
    sandbox_id: str = "local"
    subject: str = "agent"

    def __repr__(self) -> str:  # never print the secret
        return f"SandboxKey(sandbox_id={self.sandbox_id!r}, subject={self.subject!r})"

    def view(self) -> str:
        return mint_token(self.secret, role="view", sandbox_id=self.sandbox_id, subject=self.subject)

    def control(self) -> str:
        return mint_token(self.secret, role="control", sandbox_id=self.sandbox_id, subject=self.subject)

    def drive(self) -> str:
        """A drive token for every frame of the sandbox (not a step grant): a connection that says hello with it
        hears what only those who may drive hear (file choosers, the page's cursor, downloads), and drives nothing
        until one of its steps does."""
        return mint_token(self.secret, role="drive", sandbox_id=self.sandbox_id, subject=self.subject)

    def step(self, frame: str) -> str:
        """A one-step drive grant for `frame` (30 s), minted now: the newest grant, so it drives."""
        return mint_token(self.secret, role="drive", sandbox_id=self.sandbox_id, frame=frame,
                          subject=self.subject, step=True)
