import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseVideoMessage, encodeVideoMessage, HeaderError, HEADER_BYTES } from '../../web/lib/header.js';

test('parses the 16-byte big-endian header and keeps the payload', () => {
  const bytes = new Uint8Array([
    1, 0b11, 0x01, 0x02, // kind 1, keyframe + refinement, slot 258
    0xde, 0xad, 0xbe, 0xef, // sequence
    0x00, 0x06, 0x4b, 0x2e, 0x6c, 0x1a, 0x23, 0x45, // capture time
    0, 0, 0, 1, 0x67, // payload
  ]);
  const m = parseVideoMessage(bytes.buffer);
  assert.equal(m.kind, 1);
  assert.equal(m.flags, 3);
  assert.equal(m.keyframe, true);
  assert.equal(m.refinement, true);
  assert.equal(m.slot, 258);
  assert.equal(m.sequence, 0xdeadbeef);
  assert.equal(m.captureUs, Number(0x00064b2e6c1a2345n));
  assert.deepEqual([...m.payload], [0, 0, 0, 1, 0x67]);
});

test('flags: delta without refinement', () => {
  const m = parseVideoMessage(encodeVideoMessage({ slot: 0, sequence: 7, captureUs: 1, keyframe: false }));
  assert.equal(m.keyframe, false);
  assert.equal(m.refinement, false);
  const r = parseVideoMessage(encodeVideoMessage({ slot: 0, sequence: 7, captureUs: 1, refinement: true }));
  assert.equal(r.keyframe, false);
  assert.equal(r.refinement, true);
});

test('round trip with a realistic capture time (microseconds since 1970)', () => {
  const captureUs = 1_764_500_000_123_456;
  const payload = new Uint8Array([9, 8, 7]);
  const m = parseVideoMessage(encodeVideoMessage({ keyframe: true, slot: 65535, sequence: 2 ** 32 - 1, captureUs,
    payload }));
  assert.equal(m.captureUs, captureUs);
  assert.equal(m.slot, 65535);
  assert.equal(m.sequence, 2 ** 32 - 1);
  assert.deepEqual([...m.payload], [9, 8, 7]);
});

test('a typed-array view at an offset is read from its own start', () => {
  const inner = encodeVideoMessage({ slot: 3, sequence: 4, captureUs: 5, payload: new Uint8Array([1]) });
  const outer = new Uint8Array(inner.length + 10);
  outer.set(inner, 10);
  const m = parseVideoMessage(outer.subarray(10));
  assert.equal(m.slot, 3);
  assert.equal(m.sequence, 4);
  assert.equal(m.captureUs, 5);
  assert.deepEqual([...m.payload], [1]);
});

test('a short message is refused', () => {
  assert.throws(() => parseVideoMessage(new Uint8Array(HEADER_BYTES - 1)), HeaderError);
  assert.throws(() => parseVideoMessage('text'), HeaderError);
});

test('an empty payload is fine', () => {
  assert.equal(parseVideoMessage(new Uint8Array(HEADER_BYTES)).payload.length, 0);
});
