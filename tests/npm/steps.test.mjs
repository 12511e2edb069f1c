// The events of the Node client's steps against those of the Python client (tests/npm/step_vectors.json,
// checked against framestream/client/steps.py by tests/npm/test_tokens.py).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import * as steps from '../../web/node/steps.js';

const vectors = JSON.parse(readFileSync(new URL('./step_vectors.json', import.meta.url), 'utf8'));

test('chords as the Python client sends them', () => {
  for (const v of vectors.chord) assert.deepEqual(steps.chord(v.spec), v.events, v.spec);
});

test('click, drag, scroll, move and text as the Python client sends them', () => {
  for (const name of ['click', 'drag', 'scroll', 'move', 'text']) {
    for (const v of vectors[name]) assert.deepEqual(steps[name](...v.args), v.events, `${name} ${JSON.stringify(v.args)}`);
  }
});

test('bad chords and buttons are refused before anything is sent', () => {
  assert.throws(() => steps.chord('Hyper+a'), RangeError);
  assert.throws(() => steps.click(1, 1, { button: 'thumb' }), RangeError);
  assert.throws(() => steps.text(''), RangeError);
  assert.equal(steps.text('x'.repeat(10001)).length, 2);
});
