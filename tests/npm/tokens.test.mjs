// The token recipe of web/node/tokens.js against the vectors that tests/npm/test_tokens.py checks with the
// service's own framestream.core.tokens: the same keys, claims JSON and tokens, byte for byte.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import {
  sandboxKey, mintToken, verifyToken, TokenError, SandboxKey, pyNumber, pyRound, claimsJson,
} from '../../web/node/tokens.js';

const vectors = JSON.parse(readFileSync(new URL('./token_vectors.json', import.meta.url), 'utf8'));
const hex = (bytes) => Buffer.from(bytes).toString('hex');

test('sandboxKey is HKDF-SHA256 with the service salt (every vector)', () => {
  assert.ok(vectors.keys.length >= 4);
  for (const v of vectors.keys) {
    const key = sandboxKey(v.secret, v.sandbox);
    assert.equal(hex(key.bytes), v.key_hex, `${v.secret} / ${v.sandbox}`);
    assert.equal(key.sandboxId, v.sandbox);
    assert.equal(hex(sandboxKey(Buffer.from(v.secret, 'utf8'), v.sandbox).bytes), v.key_hex);
  }
});

test('the worked example of docs/protocol.md', () => {
  const key = sandboxKey('example-secret', 'local');
  assert.equal(hex(key.bytes), 'fa3585c5fc41e82b2e11de4a6c8371a15e283bced09383f0532278f9c9b600ea');
  const token = mintToken(key, { role: 'drive', frame: 'f1', sub: 'alice', now: 1700000000.5, jti: 'Xq3v9bK2mN4pR7sT' });
  assert.equal(token.split('.')[1], 'ueNv_u8FXjBDcozpYppZzFFx222EfYMzHeBkTJMJ6sI');
});

test('mintToken reproduces every token byte for byte', () => {
  assert.ok(vectors.mint.length >= 8);
  for (const v of vectors.mint) {
    const key = sandboxKey(v.secret, v.sandbox);
    const token = mintToken(key, {
      role: v.role, frame: v.frame, sub: v.sub, now: v.now, ttl: v.ttl ?? undefined, step: v.step, jti: v.jti,
    });
    const [payload] = token.split('.');
    assert.equal(Buffer.from(payload, 'base64url').toString('utf8'), v.claims_json);
    assert.equal(token, v.token, v.claims_json);
    const claims = verifyToken(key, token, { now: v.now + 1 });
    assert.equal(claims.sub, v.sub);
    assert.equal(claims.step, v.step);
  }
});

test('verifyToken refuses what the service refuses, with its code', () => {
  assert.ok(vectors.reject.length >= 15);
  for (const v of vectors.reject) {
    const key = sandboxKey(v.secret, v.sandbox);
    assert.throws(() => verifyToken(key, v.token, { now: v.now }),
      (err) => err instanceof TokenError && err.code === v.code && !err.message.includes(v.token), v.why);
  }
  for (const v of vectors.accept) verifyToken(sandboxKey(v.secret, v.sandbox), v.token, { now: v.now });
});

test('a fresh token: 16-character jti, now as iat, ttl capped, the key never printed', () => {
  const key = sandboxKey('s', 'local');
  const before = Date.now() / 1000;
  const claims = verifyToken(key, mintToken(key, { role: 'drive', step: true, ttl: 500 }));
  assert.equal(claims.jti.length, 16);
  assert.ok(claims.iat >= before - 0.001 && claims.iat <= Date.now() / 1000 + 0.001);
  assert.ok(Math.abs(claims.exp - claims.iat - 30) < 1e-5);
  assert.equal(JSON.stringify(key), '{"sandboxId":"local"}');
  assert.equal(String(key), 'SandboxKey(local)');
  assert.ok(key instanceof SandboxKey);
  assert.throws(() => mintToken(key, { role: 'view', step: true }), RangeError);
  assert.throws(() => mintToken(key, { role: 'admin' }), RangeError);
  assert.throws(() => mintToken(key, { role: 'view', ttl: 0 }), RangeError);
  assert.throws(() => mintToken(key, { role: 'view', sub: 'x'.repeat(257) }), RangeError);
  assert.throws(() => mintToken('not a key', { role: 'view' }), TypeError);
  assert.throws(() => sandboxKey('', 'local'), TypeError);
  assert.throws(() => verifyToken(sandboxKey('other', 'local'), mintToken(key, { role: 'view' })), TokenError);
});

test('numbers and strings as Python json.dumps writes them', () => {
  const cases = [[1700000000, '1700000000.0'], [0.0001, '0.0001'], [0.00001, '1e-05'], [1e16, '1e+16'],
    [1.5e-7, '1.5e-07'], [123.456, '123.456'], [2.5, '2.5'], [0, '0.0'], [-1.5, '-1.5'], [1e22, '1e+22']];
  for (const [x, text] of cases) assert.equal(pyNumber(x, true), text, String(x));
  assert.equal(pyNumber(1, false), '1');
  assert.equal(pyRound(1700000000.0078125), 1700000000.007812); // a tie: half to even, as Python's round
  assert.equal(pyRound(1.0000025), 1.000002);
  assert.equal(pyRound(0.0000015), 0.000002);
  const json = claimsJson({ v: 1, sbx: 'ü', frm: '*', role: 'view', sub: '😀\x7f\n"', iat: 1, exp: 2, jti: 'j' });
  assert.equal(json, '{"v":1,"sbx":"\\u00fc","frm":"*","role":"view","sub":"\\ud83d\\ude00\\u007f\\n\\"","iat":1.0,"exp":2.0,"jti":"j"}');
});
