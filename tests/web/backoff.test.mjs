import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Backoff } from '../../web/lib/backoff.js';

test('delays grow exponentially up to the cap (no jitter)', () => {
  const b = new Backoff({ baseMs: 100, maxMs: 1000, factor: 2, jitter: 0 });
  assert.deepEqual(Array.from({ length: 7 }, () => b.next()), [100, 200, 400, 800, 1000, 1000, 1000]);
});

test('reset starts again from the base', () => {
  const b = new Backoff({ baseMs: 100, maxMs: 1000, jitter: 0 });
  b.next();
  b.next();
  b.reset();
  assert.equal(b.next(), 100);
});

test('jitter keeps each delay within [d*(1-jitter), d]', () => {
  const low = new Backoff({ baseMs: 100, maxMs: 10_000, jitter: 0.5, random: () => 0 });
  const high = new Backoff({ baseMs: 100, maxMs: 10_000, jitter: 0.5, random: () => 1 });
  assert.deepEqual([low.next(), low.next(), low.next()], [50, 100, 200]);
  assert.deepEqual([high.next(), high.next(), high.next()], [100, 200, 400]);
});

test('jittered delays never pass the cap, never go below half of it once capped', () => {
  let seed = 12345; // a small deterministic generator (mulberry32)
  const random = () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const b = new Backoff({ baseMs: 250, maxMs: 10_000, random });
  const delays = Array.from({ length: 50 }, () => b.next());
  for (const d of delays) assert.ok(d >= 125 && d <= 10_000, `delay ${d}`);
  for (const d of delays.slice(10)) assert.ok(d >= 5000, `capped delay ${d}`);
  assert.ok(new Set(delays.slice(10)).size > 5, 'jitter spreads the capped delays');
});

test('a huge attempt count does not overflow to Infinity or NaN', () => {
  const b = new Backoff({ baseMs: 250, maxMs: 10_000, jitter: 0 });
  b.attempts = 5000;
  assert.equal(b.next(), 10_000);
});

test('bad options are refused', () => {
  assert.throws(() => new Backoff({ baseMs: 0 }), RangeError);
  assert.throws(() => new Backoff({ baseMs: 100, maxMs: 50 }), RangeError);
  assert.throws(() => new Backoff({ jitter: 2 }), RangeError);
});
