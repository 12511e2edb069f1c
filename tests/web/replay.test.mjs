// The replay view's pure parts (web/lib/replay.js): the fragment, where a step acted, and its one-line summary.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { describeStep, readFragment, stepPlace } from '../../web/lib/replay.js';

test('the fragment names the token, the frame and perhaps a recording', () => {
  assert.deepEqual(readFragment('#token=T.x&frame=f1'), { token: 'T.x', frame: 'f1', recording: null });
  assert.equal(readFragment('#token=a&frame=b&recording=r1').recording, 'r1');
});

test('a step acted where its last pointer event was', () => {
  const click = { events: [{ kind: 'mouse', action: 'down', x: 10, y: 20 }, { kind: 'mouse', action: 'up', x: 11, y: 21 }] };
  assert.deepEqual(stepPlace(click), { x: 11, y: 21 });
  assert.deepEqual(stepPlace({ events: [{ kind: 'touch', action: 'start', points: [{ id: 0, x: 5, y: 6 }] }] }), { x: 5, y: 6 });
  assert.equal(stepPlace({ events: [{ kind: 'text', text: 'a' }] }), null);
  assert.equal(stepPlace({ kind: 'navigate', url: 'http://x/' }), null);
});

test('a step reads as who did what and how it ended; hidden text stays hidden', () => {
  assert.equal(describeStep({ subject: 'agent', step: true, kind: 'input', ok: true,
    events: [{ kind: 'text', redacted: true, length: 7 }] }), 'agent (step): text (7 hidden)');
  assert.equal(describeStep({ subject: 'bob', kind: 'navigate', url: 'http://x/', ok: false, error: 'navigation-failed' }),
    'bob: navigate http://x/ → navigation-failed');
});
