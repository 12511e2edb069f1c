"""Mint and verify framestream tokens: the small, light import for the app and the agent.

Only the standard library and framestream.core.tokens are imported, so this stays cheap to load.

    from framestream.tokens import mint_token, verify_token
    token = mint_token(os.environ["TERMINAL_AUTH_SECRET"], role="drive", sandbox_id="sbx1", frame="f1")
"""

from __future__ import annotations

import time

from framestream.core.errors import TokenError
from framestream.core.tokens import ROLES, Claims, derive_key, mint, verify

__all__ = ["ROLES", "Claims", "TokenError", "mint_token", "verify_token"]


def _key(secret: str | bytes, sandbox_id: str) -> bytes:
    return derive_key(secret.encode("utf-8") if isinstance(secret, str) else secret, sandbox_id)


def mint_token(
    secret: str | bytes,
    *,
    role: str,
    sandbox_id: str = "local",
    frame: str = "*",
    subject: str = "user",
    ttl: float | None = None,
    step: bool = False,
) -> str:
    """A token for `role` on `frame`, valid from now for `ttl` seconds (default and cap: the role's max)."""
    return mint(
        _key(secret, sandbox_id),
        sandbox=sandbox_id,
        role=role,
        now=time.time(),
        frame=frame,
        subject=subject,
        ttl=ttl,
        step=step,
    )


def verify_token(secret: str | bytes, token: str, *, sandbox_id: str = "local") -> Claims:
    """The token's claims, or TokenError (`unauthorized` or `expired`)."""
    return verify(_key(secret, sandbox_id), token, sandbox=sandbox_id, now=time.time())
