from __future__ import annotations

import base64
import hashlib
import hmac
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from framestream.core import tokens
from framestream.core.errors import TokenError
from framestream.core.tokens import (
    CLOCK_SKEW_S,
    MAX_TTL,
    STEP_MAX_TTL,
    Claims,
    derive_key,
    mint,
    verify,
)
from framestream.tokens import mint_token, verify_token

NOW = 1_700_000_000.25
SECRET = b"correct horse battery staple"
KEY = derive_key(SECRET, "sbx-1")


def b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def sign_raw(key: bytes, claims: object) -> str:
    """An independent implementation of the token recipe, for hand-made (possibly bad) claims."""
    payload = b64(json.dumps(claims, separators=(",", ":")).encode())
    return payload + "." + b64(hmac.new(key, payload.encode(), hashlib.sha256).digest())


def claims_dict(**over: object) -> dict[str, object]:
    base: dict[str, object] = {
        "v": 1,
        "sbx": "sbx-1",
        "frm": "*",
        "role": "drive",
        "sub": "alice",
        "iat": NOW,
        "exp": NOW + 60,
        "jti": "j1",
    }
    base.update(over)
    return base


def refused(token: str, code: str = "unauthorized", now: float = NOW, sandbox: str = "sbx-1") -> str:
    with pytest.raises(TokenError) as info:
        verify(KEY, token, sandbox=sandbox, now=now)
    assert info.value.code == code
    if len(token) > 3:
        assert token not in info.value.message
    return info.value.message


# --- key derivation ---------------------------------------------------------------------------------------


def test_hkdf_matches_rfc5869_test_case_1() -> None:
    okm = tokens._hkdf_sha256(bytes([0x0B] * 22), bytes(range(0x0D)), bytes(range(0xF0, 0xFA)), 42)
    assert okm.hex() == (
        "3cb25f25faacd57a90434f64d0362f2a2d2d0a90cf1a5a4c5db02d56ecc4c5bf34007208d5b887185865"
    )


def test_derive_key_is_hkdf_with_the_contract_salt_and_info() -> None:
    key = derive_key(b"example-secret", "local")
    assert len(key) == 32
    assert key == tokens._hkdf_sha256(b"example-secret", b"framestream/v1", b"local", 32)
    assert key.hex() == "fa3585c5fc41e82b2e11de4a6c8371a15e283bced09383f0532278f9c9b600ea"
    assert derive_key(b"example-secret", "other") != key
    with pytest.raises(ValueError):
        derive_key(b"", "local")


def test_worked_example_in_docs_is_stable() -> None:
    key = derive_key(b"example-secret", "local")
    prk = hmac.new(b"framestream/v1", b"example-secret", hashlib.sha256).digest()
    assert prk.hex() == "38be52b87ca546321311e5711ba2056cfa901f3b034457c8d348d7b2f9eefb51"
    assert key == hmac.new(prk, b"local\x01", hashlib.sha256).digest()
    token = mint(
        key,
        sandbox="local",
        role="drive",
        now=1700000000.5,
        frame="f1",
        subject="alice",
        jti="Xq3v9bK2mN4pR7sT",
    )
    assert token == (
        "eyJ2IjoxLCJzYngiOiJsb2NhbCIsImZybSI6ImYxIiwicm9sZSI6ImRyaXZlIiwic3ViIjoiYWxpY2UiLCJpYXQiOjE3MDAw"
        "MDAwMDAuNSwiZXhwIjoxNzAwMDAwMTIwLjUsImp0aSI6IlhxM3Y5YksybU40cFI3c1QifQ"
        ".ueNv_u8FXjBDcozpYppZzFFx222EfYMzHeBkTJMJ6sI"
    )
    step = mint(
        key,
        sandbox="local",
        role="drive",
        now=1700000003.25,
        frame="f1",
        subject="agent",
        step=True,
        jti="s7Kp2QwLx9ZmBv4c",
    )
    assert step == (
        "eyJ2IjoxLCJzYngiOiJsb2NhbCIsImZybSI6ImYxIiwicm9sZSI6ImRyaXZlIiwic3ViIjoiYWdlbnQiLCJpYXQiOjE3MDAw"
        "MDAwMDMuMjUsImV4cCI6MTcwMDAwMDAzMy4yNSwianRpIjoiczdLcDJRd0x4OVptQnY0YyIsInN0ZXAiOnRydWV9"
        ".NctO4-_ljrCDLVDgNLMea6WrGpd0a9y5s40hsgVCRzc"
    )


# --- mint ---------------------------------------------------------------------------------------------------


def test_mint_compact_json_and_signature_recipe() -> None:
    token = mint(KEY, sandbox="sbx-1", role="view", now=NOW, frame="f1", subject="bob", jti="abc")
    payload, sig = token.split(".")
    assert "=" not in token
    raw = base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)).decode()
    assert raw == (
        '{"v":1,"sbx":"sbx-1","frm":"f1","role":"view","sub":"bob","iat":1700000000.25,'
        '"exp":1700000600.25,"jti":"abc"}'
    )
    assert sig == b64(hmac.new(KEY, payload.encode("ascii"), hashlib.sha256).digest())


def test_mint_defaults_caps_and_step() -> None:
    c = verify(KEY, mint(KEY, sandbox="sbx-1", role="drive", now=NOW), sandbox="sbx-1", now=NOW)
    assert (c.frm, c.sub, c.step, c.exp - c.iat) == ("*", "user", False, 120)
    c = verify(KEY, mint(KEY, sandbox="sbx-1", role="view", now=NOW, ttl=10_000), sandbox="sbx-1", now=NOW)
    assert c.exp - c.iat == 600
    c = verify(KEY, mint(KEY, sandbox="sbx-1", role="drive", now=NOW, ttl=5), sandbox="sbx-1", now=NOW)
    assert c.exp - c.iat == 5
    token = mint(KEY, sandbox="sbx-1", role="drive", now=NOW, step=True, subject="agent", ttl=999)
    c = verify(KEY, token, sandbox="sbx-1", now=NOW)
    assert (c.step, c.sub, c.exp - c.iat) == (True, "agent", STEP_MAX_TTL)
    assert '"step":true' in base64.urlsafe_b64decode(token.split(".")[0] + "==").decode()


def test_mint_random_jti() -> None:
    a = verify(KEY, mint(KEY, sandbox="sbx-1", role="view", now=NOW), sandbox="sbx-1", now=NOW)
    b = verify(KEY, mint(KEY, sandbox="sbx-1", role="view", now=NOW), sandbox="sbx-1", now=NOW)
    assert a.jti != b.jti
    assert len(a.jti) == 16


@pytest.mark.parametrize(
    "kwargs",
    [
        {"role": "admin"},
        {"role": "view", "ttl": 0},
        {"role": "view", "ttl": -1},
        {"role": "view", "ttl": float("nan")},
        {"role": "view", "step": True},
        {"role": "control", "step": True},
        {"role": "view", "frame": ""},
        {"role": "view", "subject": ""},
    ],
)
def test_mint_refuses_bad_arguments(kwargs: dict[str, object]) -> None:
    with pytest.raises(ValueError):
        mint(KEY, sandbox="sbx-1", now=NOW, **kwargs)  # type: ignore[arg-type]


# --- verify -------------------------------------------------------------------------------------------------


def test_round_trip() -> None:
    token = mint(KEY, sandbox="sbx-1", role="drive", now=NOW, frame="f9", subject="alice", jti="j9")
    assert verify(KEY, token, sandbox="sbx-1", now=NOW + 1) == Claims(
        v=1, sbx="sbx-1", frm="f9", role="drive", sub="alice", iat=NOW, exp=NOW + 120, jti="j9", step=False
    )


def test_forged_signature_refused() -> None:
    token = mint(KEY, sandbox="sbx-1", role="view", now=NOW)
    payload, sig = token.split(".")
    flipped = sig[:-2] + ("A" if sig[-2] != "A" else "B") + sig[-1]
    assert "signature" in refused(f"{payload}.{flipped}")
    # A payload raised to drive but carrying the view token's signature.
    raised = b64(json.dumps(claims_dict(), separators=(",", ":")).encode())
    assert "signature" in refused(f"{raised}.{sig}")


def test_other_secret_refused() -> None:
    other = derive_key(b"another secret", "sbx-1")
    assert "signature" in refused(mint(other, sandbox="sbx-1", role="view", now=NOW))


def test_other_sandbox_refused() -> None:
    # Its key is derived for another sandbox, so the signature fails...
    other_key = derive_key(SECRET, "sbx-2")
    assert "signature" in refused(mint(other_key, sandbox="sbx-2", role="view", now=NOW))
    # ...and a token signed with this key but naming another sandbox fails on the claim.
    assert "another sandbox" in refused(mint(KEY, sandbox="sbx-2", role="view", now=NOW))


def test_expired_and_skew() -> None:
    token = mint(KEY, sandbox="sbx-1", role="drive", now=NOW, ttl=60)
    assert verify(KEY, token, sandbox="sbx-1", now=NOW + 60 + CLOCK_SKEW_S).jti  # skew tolerated
    assert refused(token, "expired", now=NOW + 60 + CLOCK_SKEW_S + 0.01) == "token expired"


def test_issued_in_the_future() -> None:
    token = mint(KEY, sandbox="sbx-1", role="view", now=NOW)
    assert verify(KEY, token, sandbox="sbx-1", now=NOW - CLOCK_SKEW_S).iat == NOW  # skew tolerated
    assert "future" in refused(token, now=NOW - CLOCK_SKEW_S - 0.01)


@pytest.mark.parametrize(
    ("role", "step", "lifetime", "ok"),
    [
        ("drive", False, MAX_TTL["drive"] + 1, True),  # within the 1 s rounding tolerance
        ("drive", False, MAX_TTL["drive"] + 1.5, False),
        ("view", False, 600, True),
        ("view", False, 602, False),
        ("control", False, 3600, False),
        ("drive", True, 30, True),
        ("drive", True, 32, False),
    ],
)
def test_lifetime_cap(role: str, step: bool, lifetime: float, ok: bool) -> None:
    claims = claims_dict(role=role, exp=NOW + lifetime, **({"step": True} if step else {}))
    token = sign_raw(KEY, claims)
    if ok:
        assert verify(KEY, token, sandbox="sbx-1", now=NOW).exp == NOW + lifetime
    else:
        assert "lifetime" in refused(token)


@pytest.mark.parametrize(
    "over",
    [
        {"v": 2},
        {"v": True},
        {"v": "1"},
        {"role": "admin"},
        {"role": "view", "step": True},
        {"step": "yes"},
        {"sub": ""},
        {"sub": 5},
        {"jti": None},
        {"frm": ""},
        {"iat": "now"},
        {"exp": True},
        {"exp": NOW - 10},  # exp before iat
        {"sbx": "x" * 300},
    ],
)
def test_bad_claims_refused(over: dict[str, object]) -> None:
    refused(sign_raw(KEY, claims_dict(**over)))


@pytest.mark.parametrize("missing", ["v", "sbx", "frm", "role", "sub", "iat", "exp", "jti"])
def test_missing_claim_refused(missing: str) -> None:
    claims = claims_dict()
    del claims[missing]
    refused(sign_raw(KEY, claims))


@pytest.mark.parametrize(
    "token",
    ["", ".", "abc", "abc.", ".abc", "a.b.c", "a b.c", "é.x", "=.=", "x" * 5000],
)
def test_malformed_refused(token: str) -> None:
    refused(token)


def test_signed_non_object_refused() -> None:
    assert refused(sign_raw(KEY, [1, 2])) == "malformed token claims"
    # A validly signed payload that is not JSON at all.
    payload = b64(b"\xff\xfe not json")
    token = payload + "." + b64(hmac.new(KEY, payload.encode(), hashlib.sha256).digest())
    assert refused(token) == "malformed token claims"


def test_too_long_refused_before_work() -> None:
    token = sign_raw(KEY, claims_dict(pad="x" * 4000))
    assert len(token) > 4096
    assert refused(token) == "token too long"


def test_non_canonical_signature_refused() -> None:
    # 32 bytes encode to 43 characters whose last one carries 2 spare bits; setting them must not verify.
    token = mint(KEY, sandbox="sbx-1", role="view", now=NOW)
    payload, sig = token.split(".")
    alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
    last = alphabet.index(sig[-1])
    twin = sig[:-1] + alphabet[last | 1]
    assert twin != sig
    assert base64.urlsafe_b64decode(twin + "=") == base64.urlsafe_b64decode(sig + "=")
    refused(f"{payload}.{twin}")


# --- allows -------------------------------------------------------------------------------------------------


def make(role: str, frm: str = "*", step: bool = False) -> Claims:
    return Claims(v=1, sbx="s", frm=frm, role=role, sub="u", iat=0, exp=1, jti="j", step=step)


def test_allows_roles() -> None:
    assert make("view").allows("view", "f1")
    assert not make("view").allows("drive", "f1")  # a view token cannot drive
    assert not make("view").allows("control", None)
    assert make("drive").allows("view", "f1")  # drive implies view
    assert make("drive").allows("drive", "f1")
    assert make("drive", step=True).allows("drive", "f1")
    assert not make("drive").allows("control", None)
    assert make("control").allows("control", None)
    assert make("control").allows("view", "f1")  # the operator lists and watches frames
    assert not make("control").allows("drive", "f1")
    assert not make("view").allows("admin", None)


def test_allows_frames() -> None:
    assert make("drive", frm="f1").allows("drive", "f1")
    assert not make("drive", frm="f1").allows("drive", "f2")  # other frame
    assert not make("view", frm="f1").allows("view", "f2")
    assert make("view", frm="*").allows("view", "anything")
    assert make("view", frm="f1").allows("view", None)  # frame-independent route


# --- facade -------------------------------------------------------------------------------------------------


def test_facade_round_trip() -> None:
    token = mint_token("s3cret", role="drive", sandbox_id="sbx-9", frame="f1", subject="agent", step=True)
    claims = verify_token(b"s3cret", token, sandbox_id="sbx-9")
    assert (claims.role, claims.frm, claims.sub, claims.step, claims.sbx) == (
        "drive",
        "f1",
        "agent",
        True,
        "sbx-9",
    )
    assert claims.exp - claims.iat == 30
    with pytest.raises(TokenError) as info:
        verify_token("other", token, sandbox_id="sbx-9")
    assert info.value.code == "unauthorized"
    with pytest.raises(TokenError):
        verify_token("s3cret", token)  # default sandbox "local"
    assert verify_token("s3cret", mint_token("s3cret", role="view")).sbx == "local"


# --- property tests -----------------------------------------------------------------------------------------

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12,
)


@settings(database=None, deadline=None, max_examples=150)
@given(st.text(max_size=300))
def test_verify_arbitrary_text_only_raises_token_error(text: str) -> None:
    with pytest.raises(TokenError):
        verify(KEY, text, sandbox="sbx-1", now=NOW)


@settings(database=None, deadline=None, max_examples=150)
@given(st.text(alphabet="ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_.=", max_size=200))
def test_verify_token_shaped_text_only_raises_token_error(text: str) -> None:
    with pytest.raises(TokenError):
        verify(KEY, text, sandbox="sbx-1", now=NOW)


@settings(database=None, deadline=None, max_examples=150)
@given(
    st.one_of(
        json_values,
        st.fixed_dictionaries(
            {},
            optional={
                "v": json_values | st.just(1),
                "sbx": json_values | st.just("sbx-1"),
                "frm": json_values | st.just("*"),
                "role": json_values | st.sampled_from(["view", "drive", "control"]),
                "sub": json_values | st.just("u"),
                "iat": json_values | st.floats(NOW - 100, NOW + 100),
                "exp": json_values | st.floats(NOW - 100, NOW + 700),
                "jti": json_values | st.just("j"),
                "step": json_values | st.booleans(),
            },
        ),
    )
)
def test_verify_signed_arbitrary_claims_never_crashes(claims: object) -> None:
    token = sign_raw(KEY, claims)
    try:
        result = verify(KEY, token, sandbox="sbx-1", now=NOW)
    except TokenError as exc:
        assert exc.code in ("unauthorized", "expired")
        return
    assert isinstance(claims, dict)
    assert result.sbx == "sbx-1"
    assert result.role in ("view", "drive", "control")
    assert result.iat <= NOW + CLOCK_SKEW_S <= result.exp + 2 * CLOCK_SKEW_S


@settings(database=None, deadline=None, max_examples=150)
@given(
    role=st.sampled_from(["view", "drive", "control"]),
    frame=st.text(min_size=1, max_size=40),
    subject=st.text(min_size=1, max_size=40),
    ttl=st.floats(min_value=0.001, max_value=10_000),
    now=st.floats(min_value=0, max_value=4e9),
)
def test_mint_verify_round_trip(role: str, frame: str, subject: str, ttl: float, now: float) -> None:
    token = mint(KEY, sandbox="sbx-1", role=role, now=now, frame=frame, subject=subject, ttl=ttl)
    claims = verify(KEY, token, sandbox="sbx-1", now=now)
    assert (claims.role, claims.frm, claims.sub) == (role, frame, subject)
    assert claims.exp - claims.iat == pytest.approx(min(ttl, MAX_TTL[role]), abs=1e-5)
