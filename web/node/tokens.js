// Tokens for the app's server: the service's recipe (docs/protocol.md, "Tokens"; framestream/core/tokens.py),
// reproduced byte for byte: the same key, the same compact JSON (Python's json.dumps with ensure_ascii), the same
// MAC. A token minted here verifies in the service, and one minted by the Python package verifies here.

import { createHmac, hkdfSync, randomBytes, timingSafeEqual } from 'node:crypto';

export const ROLES = Object.freeze(['view', 'drive', 'control']);
export const MAX_TTL = Object.freeze({ view: 600, drive: 120, control: 600 });
export const STEP_MAX_TTL = 30;
export const CLOCK_SKEW_S = 5;
export const LIFETIME_TOLERANCE_S = 1;
export const MAX_TOKEN_CHARS = 4096;
export const MAX_CLAIM_CHARS = 256;
const HKDF_SALT = 'framestream/v1';
const B64URL = /^[A-Za-z0-9_-]+$/;

/** A token the service (or this verifier) refuses: `code` is `unauthorized` or `expired`. */
export class TokenError extends Error {
  constructor(code, message) {
    super(message);
    this.name = 'TokenError';
    this.code = code;
  }
}

/** One sandbox's 32-byte key and its id. The key bytes never show in logs (`toJSON`, inspect). */
export class SandboxKey {
  #bytes;

  constructor(bytes, sandboxId) {
    if (!(bytes instanceof Uint8Array) || bytes.length !== 32) throw new TypeError('a sandbox key is 32 bytes');
    if (typeof sandboxId !== 'string' || !sandboxId) throw new TypeError('a sandbox id is a non-empty string');
    this.#bytes = Uint8Array.from(bytes);
    this.sandboxId = sandboxId;
    Object.freeze(this);
  }

  /** The key's bytes (a copy). */
  get bytes() { return Uint8Array.from(this.#bytes); }

  toJSON() { return { sandboxId: this.sandboxId }; }

  toString() { return `SandboxKey(${this.sandboxId})`; }

  [Symbol.for('nodejs.util.inspect.custom')]() { return this.toString(); }
}

const utf8 = (text) => Buffer.from(text, 'utf8');
const chars = (text) => [...text].length; // code points, as Python's len()

/** HKDF-SHA256(ikm = secret, salt = "framestream/v1", info = sandbox id, 32 bytes): the service's key. */
export function sandboxKey(secret, sandboxId = 'local') {
  const ikm = typeof secret === 'string' ? utf8(secret) : secret;
  if (!(ikm instanceof Uint8Array) || !ikm.length) throw new TypeError('the secret is empty');
  if (typeof sandboxId !== 'string' || !sandboxId) throw new TypeError('a sandbox id is a non-empty string');
  return new SandboxKey(new Uint8Array(hkdfSync('sha256', ikm, utf8(HKDF_SALT), utf8(sandboxId), 32)), sandboxId);
}

export function base64url(bytes) {
  return Buffer.from(bytes).toString('base64url');
}

/** Python's round(x, digits): round half to even on the exact binary value. */
export function pyRound(x, digits = 6) {
  if (!Number.isFinite(x) || Math.abs(x) >= 1e15) return x;
  const exact = Math.abs(x).toFixed(100); // every digit of the double (it has at most ~60 past the point here)
  const [whole, frac] = exact.split('.');
  const kept = BigInt(whole + frac.slice(0, digits));
  const rest = frac.slice(digits).replace(/0+$/, '');
  let n = kept;
  if (rest) {
    const first = rest.charCodeAt(0) - 48;
    if (first > 5 || (first === 5 && (rest.length > 1 || kept % 2n === 1n))) n += 1n;
  }
  const text = n.toString().padStart(digits + 1, '0');
  const value = Number(`${text.slice(0, -digits)}.${text.slice(-digits)}`);
  return x < 0 ? -value : value;
}

/** A number as Python's json.dumps writes it: ints as ints, floats by repr ("1700000000.0", "1e+16"). */
export function pyNumber(x, isFloat) {
  if (!Number.isFinite(x)) throw new RangeError('not a finite number');
  if (!isFloat) return String(x);
  const [mantissa, expText] = x.toExponential().split('e'); // the shortest digits that round-trip, as repr
  const exp = Number(expText);
  const negative = mantissa.startsWith('-');
  const digits = mantissa.replace('-', '').replace('.', '');
  const sign = negative ? '-' : '';
  if (exp >= -4 && exp < 16) { // repr's fixed notation (it switches to exponents below 1e-4 and from 1e16)
    if (exp < 0) return `${sign}0.${'0'.repeat(-exp - 1)}${digits}`;
    const whole = digits.slice(0, exp + 1).padEnd(exp + 1, '0');
    const frac = digits.slice(exp + 1);
    return `${sign}${whole}.${frac || '0'}`;
  }
  const m = digits.length > 1 ? `${digits[0]}.${digits.slice(1)}` : digits;
  return `${sign}${m}e${exp < 0 ? '-' : '+'}${String(Math.abs(exp)).padStart(2, '0')}`;
}

/** A string as Python's json.dumps writes it (ensure_ascii: everything past printable ASCII as \uXXXX). */
export function pyString(text) {
  return JSON.stringify(text).replace(/[^\x20-\x7e]/g,
    (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

/** The claims' compact JSON exactly as the service writes it. */
export function claimsJson(claims) {
  const parts = [
    `"v":${pyNumber(claims.v, false)}`,
    `"sbx":${pyString(claims.sbx)}`,
    `"frm":${pyString(claims.frm)}`,
    `"role":${pyString(claims.role)}`,
    `"sub":${pyString(claims.sub)}`,
    `"iat":${pyNumber(claims.iat, true)}`,
    `"exp":${pyNumber(claims.exp, true)}`,
    `"jti":${pyString(claims.jti)}`,
  ];
  if (claims.step) parts.push('"step":true');
  return `{${parts.join(',')}}`;
}

function mac(key, payload) {
  return createHmac('sha256', key.bytes).update(payload, 'ascii').digest();
}

function checkKey(key) {
  if (!(key instanceof SandboxKey)) throw new TypeError('mintToken needs a SandboxKey (from sandboxKey(secret, id))');
}

/**
 * Sign a token. `ttl` defaults to, and is capped at, the role's maximum (30 s for a step grant).
 * @param {SandboxKey} key
 * @param {{role: 'view'|'drive'|'control', frame?: string, sub?: string, ttl?: number, step?: boolean,
 *          now?: number, jti?: string}} o `now` in unix seconds (default: this machine's clock)
 */
export function mintToken(key, { role, frame = '*', sub = 'user', ttl, step = false, now, jti } = {}) {
  checkKey(key);
  if (!ROLES.includes(role)) throw new RangeError(`unknown role ${JSON.stringify(role)}; expected one of ${ROLES.join(', ')}`);
  if (typeof step !== 'boolean') throw new TypeError('step must be a boolean');
  if (step && role !== 'drive') throw new RangeError("a step grant must have role 'drive'");
  const cap = step ? STEP_MAX_TTL : MAX_TTL[role];
  if (ttl === undefined || ttl === null) ttl = cap;
  else if (typeof ttl !== 'number' || Number.isNaN(ttl) || ttl <= 0) {
    throw new RangeError('ttl must be a positive number of seconds');
  }
  jti ??= randomBytes(12).toString('base64url');
  for (const [name, value] of [['sandbox', key.sandboxId], ['frame', frame], ['sub', sub], ['jti', jti]]) {
    if (typeof value !== 'string' || !value || chars(value) > MAX_CLAIM_CHARS) {
      throw new RangeError(`${name} must be 1 to ${MAX_CLAIM_CHARS} characters`);
    }
  }
  now ??= Date.now() / 1000;
  if (typeof now !== 'number' || !Number.isFinite(now)) throw new RangeError('now must be finite');
  // Microsecond precision, as the service rounds: short tokens that still order grants minted in quick succession.
  const iat = pyRound(now, 6);
  const claims = {
    v: 1, sbx: key.sandboxId, frm: frame, role, sub, iat, exp: pyRound(iat + Math.min(ttl, cap), 6), jti, step,
  };
  const payload = base64url(utf8(claimsJson(claims)));
  return `${payload}.${base64url(mac(key, payload))}`;
}

function claimString(obj, name) {
  const value = obj[name];
  if (typeof value !== 'string' || !value || chars(value) > MAX_CLAIM_CHARS) {
    throw new TokenError('unauthorized', `token claim '${name}' is missing or invalid`);
  }
  return value;
}

function claimTime(obj, name) {
  const value = obj[name];
  if (typeof value !== 'number' || !Number.isFinite(value)) {
    throw new TokenError('unauthorized', `token claim '${name}' is missing or invalid`);
  }
  return value;
}

/**
 * Check a token as the service does (docs/protocol.md, "Lifetimes and checks"); its claims, or TokenError.
 * Messages never contain the token.
 * @param {SandboxKey} key
 * @param {string} token
 * @param {{now?: number}} [o] unix seconds
 */
export function verifyToken(key, token, { now } = {}) {
  checkKey(key);
  now ??= Date.now() / 1000;
  if (typeof token !== 'string' || !token) throw new TokenError('unauthorized', 'missing token');
  if (token.length > MAX_TOKEN_CHARS) throw new TokenError('unauthorized', 'token too long');
  const dot = token.indexOf('.');
  const payload = dot < 0 ? token : token.slice(0, dot);
  const signature = dot < 0 ? '' : token.slice(dot + 1);
  if (dot < 0 || !B64URL.test(payload) || !B64URL.test(signature)) {
    throw new TokenError('unauthorized', 'malformed token');
  }
  const expected = Buffer.from(base64url(mac(key, payload)), 'ascii');
  const given = Buffer.from(signature, 'ascii');
  if (expected.length !== given.length || !timingSafeEqual(expected, given)) {
    throw new TokenError('unauthorized', 'bad token signature');
  }
  let obj;
  try {
    if (payload.length % 4 === 1) throw new Error('not base64url');
    obj = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(Buffer.from(payload, 'base64url')));
  } catch {
    throw new TokenError('unauthorized', 'malformed token claims');
  }
  if (!obj || typeof obj !== 'object' || Array.isArray(obj)) throw new TokenError('unauthorized', 'malformed token claims');
  if (obj.v !== 1) throw new TokenError('unauthorized', 'unsupported token version');
  const sbx = claimString(obj, 'sbx');
  if (sbx !== key.sandboxId) throw new TokenError('unauthorized', 'token is for another sandbox');
  const role = claimString(obj, 'role');
  if (!ROLES.includes(role)) throw new TokenError('unauthorized', 'token has an unknown role');
  const step = obj.step ?? false;
  if (typeof step !== 'boolean') throw new TokenError('unauthorized', "token claim 'step' is invalid");
  if (step && role !== 'drive') throw new TokenError('unauthorized', "a step grant must have role 'drive'");
  const claims = {
    v: 1, sbx, frm: claimString(obj, 'frm'), role, sub: claimString(obj, 'sub'), iat: claimTime(obj, 'iat'),
    exp: claimTime(obj, 'exp'), jti: claimString(obj, 'jti'), step,
  };
  const cap = step ? STEP_MAX_TTL : MAX_TTL[role];
  const lifetime = claims.exp - claims.iat;
  if (lifetime < 0 || lifetime > cap + LIFETIME_TOLERANCE_S) {
    throw new TokenError('unauthorized', `token lifetime exceeds the ${cap} s cap`);
  }
  if (claims.iat > now + CLOCK_SKEW_S) throw new TokenError('unauthorized', 'token issued in the future (check the clock)');
  if (now > claims.exp + CLOCK_SKEW_S) throw new TokenError('expired', 'token expired');
  return claims;
}
