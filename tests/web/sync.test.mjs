import { test } from 'node:test';
import assert from 'node:assert/strict';
import { DecodeSync, nextSequence, DECODE, DROP } from '../../web/lib/sync.js';

const key = (sequence) => ({ sequence, keyframe: true });
const delta = (sequence) => ({ sequence, keyframe: false });

test('a fresh decoder waits for a keyframe, then decodes consecutive deltas', () => {
  const s = new DecodeSync();
  s.reset(0);
  assert.equal(s.onPicture(delta(4), 10).action, DROP);
  assert.equal(s.onPicture(key(5), 20).action, DECODE);
  assert.equal(s.onPicture(delta(6), 30).action, DECODE);
  assert.equal(s.onPicture(delta(7), 40).action, DECODE);
  assert.equal(s.waiting, false);
});

test('reset does not ask at once (the server sends a keyframe after watch) but asks after retryMs', () => {
  const s = new DecodeSync({ retryMs: 1000 });
  assert.equal(s.reset(0), false);
  assert.deepEqual(s.onPicture(delta(1), 500), { action: DROP, requestKeyframe: false, gap: false });
  assert.equal(s.onPicture(delta(2), 1000).requestKeyframe, true);
  assert.equal(s.onPicture(delta(3), 1500).requestKeyframe, false);
  assert.equal(s.onPicture(delta(4), 2000).requestKeyframe, true);
  assert.equal(s.reset(3000, { requestNow: true }), true);
});

test('a gap drops the delta, asks for a keyframe once, and drops deltas until the keyframe', () => {
  const s = new DecodeSync({ retryMs: 1000 });
  s.reset(0);
  s.onPicture(key(10), 0);
  s.onPicture(delta(11), 10);
  const gap = s.onPicture(delta(13), 20);
  assert.deepEqual(gap, { action: DROP, requestKeyframe: true, gap: true });
  assert.equal(s.gaps, 1);
  // 14 follows 13, but 13 was not decoded: still dropped, and not asked again so soon.
  assert.deepEqual(s.onPicture(delta(14), 30), { action: DROP, requestKeyframe: false, gap: false });
  assert.equal(s.onPicture(delta(15), 1020).requestKeyframe, true); // still nothing after retryMs: ask again
  assert.equal(s.onPicture(key(16), 1030).action, DECODE);
  assert.equal(s.onPicture(delta(17), 1040).action, DECODE);
  assert.equal(s.keyframeRequests, 2);
  assert.equal(s.dropped, 3);
});

test('a picture from the past (a repeat) counts as a gap', () => {
  const s = new DecodeSync();
  s.onPicture(key(5), 0);
  s.onPicture(delta(6), 0);
  assert.equal(s.onPicture(delta(6), 0).gap, true);
});

test('a keyframe after a skipped stretch is decoded without complaint', () => {
  const s = new DecodeSync();
  s.onPicture(key(1), 0);
  s.onPicture(delta(2), 0);
  const r = s.onPicture(key(40), 0); // the server skipped us to a keyframe: legal
  assert.deepEqual(r, { action: DECODE, requestKeyframe: false, gap: false });
  assert.equal(s.onPicture(delta(41), 0).action, DECODE);
});

test('sequence numbers wrap at 2^32', () => {
  assert.equal(nextSequence(2 ** 32 - 1), 0);
  assert.equal(nextSequence(41), 42);
  const s = new DecodeSync();
  s.onPicture(key(2 ** 32 - 1), 0);
  assert.equal(s.onPicture(delta(0), 0).action, DECODE);
  assert.equal(s.onPicture(delta(1), 0).action, DECODE);
});

test('a decoder error asks for a keyframe at once and waits', () => {
  const s = new DecodeSync();
  s.onPicture(key(1), 0);
  assert.equal(s.onDecoderError(5), true);
  assert.equal(s.waiting, true);
  assert.equal(s.onPicture(delta(2), 6).action, DROP);
  assert.equal(s.onPicture(key(3), 7).action, DECODE);
});

test('refinement pictures are ordinary deltas in the sequence', () => {
  const s = new DecodeSync();
  s.onPicture(key(1), 0);
  assert.equal(s.onPicture({ sequence: 2, keyframe: false, refinement: true }, 0).action, DECODE);
});
