"""Stateless tokens: HKDF-derived per-sandbox key, HMAC-SHA256 signed JSON claims.

Token = base64url(claims_json) "." base64url(HMAC-SHA256(key, base64url(claims_json) as ASCII)), no padding.
Any replica holding the secret can verify a token; nothing is stored except used step-grant ids
(see core.control.ReplayGuard). Time is always passed in (`now`, unix seconds).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import math
import re
import secrets
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from framestream.core.errors import TokenError

VERSION: Final = 1
HKDF_SALT: Final = b"framestream/v1"
ROLES: Final = ("view", "drive", "control")
MAX_TTL: Final[Mapping[str, float]] = {"view": 600, "drive": 120, "control": 600}
STEP_MAX_TTL: Final = 30
CLOCK_SKEW_S: Final = 5
# exp - iat may exceed the cap by this much: minters in other languages round iat and exp to whole seconds.
LIFETIME_TOLERANCE_S: Final = 1.0
MAX_TOKEN_CHARS: Final = 4096
MAX_CLAIM_CHARS: Final = 256  # sbx, frm, sub, jti

_B64URL: Final = re.compile(r"[A-Za-z0-9_-]+")


def _hkdf_sha256(ikm: bytes, salt: bytes, info: bytes, length: int) -> bytes:
    """RFC 5869 extract-then-expand with SHA-256."""
    if not 0 < length <= 255 * 32:
        raise ValueError("HKDF length out of range")
    prk = hmac.new(salt, ikm, hashlib.sha256).digest()
    okm, block = b"", b""
    counter = 1
    while len(okm) < length:
        block = hmac.new(prk, block + info + bytes([counter]), hashlib.sha256).digest()
        okm += block
        counter += 1
    return okm[:length]


def derive_key(secret: bytes, sandbox_id: str) -> bytes:
    """The 32-byte key of one sandbox: HKDF-SHA256(secret, salt b"framestream/v1", info sandbox_id)."""
    if not secret:
        raise ValueError("the secret is empty")
    return _hkdf_sha256(secret, HKDF_SALT, sandbox_id.encode("utf-8"), 32)


@dataclass(frozen=True)
class Claims:
    v: int
    sbx: str
    frm: str
    role: str
    sub: str
    iat: float
    exp: float
    jti: str
    step: bool = False

    def allows(self, role: str, frame_id: str | None) -> bool:
        """May this token act as `role` on `frame_id`? None means a route that names no frame.

        drive implies view; control implies view too (the operator's app lists and watches the frames it
        makes live) but never drive: taking input needs a drive grant, so arbitration sees who drives.
        """
        if role == "view":
            role_ok = self.role in ROLES
        elif role in ("drive", "control"):
            role_ok = self.role == role
        else:
            return False
        return role_ok and (frame_id is None or self.frm in ("*", frame_id))

    @property
    def lifetime_cap(self) -> float:
        return STEP_MAX_TTL if self.step else MAX_TTL[self.role]


def _b64e(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _b64d(text: str) -> bytes:
    if len(text) % 4 == 1 or not _B64URL.fullmatch(text):  # 4n+1 characters can encode no byte string
        raise ValueError("not base64url")
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def _sign(key: bytes, payload_b64: str) -> str:
    return _b64e(hmac.new(key, payload_b64.encode("ascii"), hashlib.sha256).digest())


def mint(
    key: bytes,
    *,
    sandbox: str,
    role: str,
    now: float,
    frame: str = "*",
    subject: str = "user",
    ttl: float | None = None,
    step: bool = False,
    jti: str | None = None,
) -> str:
    """Sign a token. `ttl` defaults to, and is capped at, the role's maximum (30 s for a step grant)."""
    if role not in ROLES:
        raise ValueError(f"unknown role {role!r}; expected one of {', '.join(ROLES)}")
    if step and role != "drive":
        raise ValueError("a step grant must have role 'drive'")
    cap = STEP_MAX_TTL if step else MAX_TTL[role]
    if ttl is None:
        ttl = cap
    elif math.isnan(ttl) or ttl <= 0:
        raise ValueError("ttl must be a positive number of seconds")
    if jti is None:
        jti = secrets.token_urlsafe(12)
    for name, value in (("sandbox", sandbox), ("frame", frame), ("subject", subject), ("jti", jti)):
        if not value or len(value) > MAX_CLAIM_CHARS:
            raise ValueError(f"{name} must be 1 to {MAX_CLAIM_CHARS} characters")
    if not math.isfinite(now):
        raise ValueError("now must be finite")
    # Microsecond precision keeps tokens short and still orders grants minted in quick succession.
    iat = round(now, 6)
    claims: dict[str, object] = {
        "v": VERSION,
        "sbx": sandbox,
        "frm": frame,
        "role": role,
        "sub": subject,
        "iat": iat,
        "exp": round(iat + min(ttl, cap), 6),
        "jti": jti,
    }
    if step:
        claims["step"] = True
    payload = _b64e(json.dumps(claims, separators=(",", ":")).encode("utf-8"))
    return f"{payload}.{_sign(key, payload)}"


def _claim_str(obj: Mapping[str, Any], name: str) -> str:
    value = obj.get(name)
    if not isinstance(value, str) or not 0 < len(value) <= MAX_CLAIM_CHARS:
        raise TokenError("unauthorized", f"token claim '{name}' is missing or invalid")
    return value


def _claim_time(obj: Mapping[str, Any], name: str) -> float:
    value = obj.get(name)
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TokenError("unauthorized", f"token claim '{name}' is missing or invalid")
    try:
        number = float(value)
    except OverflowError:
        raise TokenError("unauthorized", f"token claim '{name}' is out of range") from None
    if not math.isfinite(number):
        raise TokenError("unauthorized", f"token claim '{name}' is out of range")
    return number


def verify(key: bytes, token: str, *, sandbox: str, now: float) -> Claims:
    """Check a token's signature, then its claims. Raises TokenError; messages never contain the token."""
    if not isinstance(token, str) or not token:
        raise TokenError("unauthorized", "missing token")
    if len(token) > MAX_TOKEN_CHARS:
        raise TokenError("unauthorized", "token too long")
    payload, dot, signature = token.partition(".")
    if not dot or not payload or not _B64URL.fullmatch(signature) or not _B64URL.fullmatch(payload):
        raise TokenError("unauthorized", "malformed token")
    # Compare the canonical encoding of the expected MAC: constant time, and no second spelling of a token.
    if not hmac.compare_digest(_sign(key, payload).encode("ascii"), signature.encode("ascii")):
        raise TokenError("unauthorized", "bad token signature")
    try:
        obj = json.loads(_b64d(payload), parse_constant=_no_constant)
    except (ValueError, RecursionError, binascii.Error):
        raise TokenError("unauthorized", "malformed token claims") from None
    if not isinstance(obj, dict):
        raise TokenError("unauthorized", "malformed token claims")

    version = obj.get("v")
    if isinstance(version, bool) or version != VERSION:
        raise TokenError("unauthorized", "unsupported token version")
    sbx = _claim_str(obj, "sbx")
    if sbx != sandbox:
        raise TokenError("unauthorized", "token is for another sandbox")
    role = _claim_str(obj, "role")
    if role not in ROLES:
        raise TokenError("unauthorized", "token has an unknown role")
    step = obj.get("step", False)
    if not isinstance(step, bool):
        raise TokenError("unauthorized", "token claim 'step' is invalid")
    if step and role != "drive":
        raise TokenError("unauthorized", "a step grant must have role 'drive'")
    claims = Claims(
        v=VERSION,
        sbx=sbx,
        frm=_claim_str(obj, "frm"),
        role=role,
        sub=_claim_str(obj, "sub"),
        iat=_claim_time(obj, "iat"),
        exp=_claim_time(obj, "exp"),
        jti=_claim_str(obj, "jti"),
        step=step,
    )
    lifetime = claims.exp - claims.iat
    if lifetime < 0 or lifetime > claims.lifetime_cap + LIFETIME_TOLERANCE_S:
        raise TokenError("unauthorized", f"token lifetime exceeds the {claims.lifetime_cap:g} s cap")
    if claims.iat > now + CLOCK_SKEW_S:
        raise TokenError("unauthorized", "token issued in the future (check the clock)")
    if now > claims.exp + CLOCK_SKEW_S:
        raise TokenError("expired", "token expired")
    return claims


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")
