import { test } from 'node:test';
import assert from 'node:assert/strict';
import { InputQueue } from '../../web/lib/queue.js';
import { StatsWindow, formatStats } from '../../web/lib/stats.js';
import { decodeClaims, roleOf, canDrive, secondsLeft } from '../../web/lib/token.js';

const b64url = (s) => Buffer.from(s).toString('base64url');
const token = (claims) => `${b64url(JSON.stringify(claims))}.${b64url('mac-not-checked-here')}`;

test('token claims are read from the first part (base64url, no padding)', () => {
  const t = token({ v: 1, sbx: 'local', frm: '*', role: 'drive', sub: 'ana ü', iat: 100, exp: 220, jti: 'x' });
  assert.equal(decodeClaims(t).sub, 'ana ü');
  assert.equal(roleOf(t), 'drive');
  assert.equal(canDrive(roleOf(t)), true);
  assert.equal(canDrive(roleOf(token({ role: 'view' }))), false);
  assert.equal(canDrive(roleOf(token({ role: 'control' }))), false);
  assert.equal(secondsLeft(t, 200), 20);
});

test('unreadable tokens give null, never throw', () => {
  for (const bad of [undefined, '', 'abc', '!!!.x', `${b64url('[1]')}.x`, `${b64url('"s"')}.x`]) {
    assert.equal(decodeClaims(bad), null, String(bad));
    assert.equal(roleOf(bad), null);
  }
  assert.equal(roleOf(token({ role: 'admin' })), null);
});

test('moves coalesce to the latest; other events flush them first', () => {
  const q = new InputQueue();
  q.pushMove({ kind: 'mouse', action: 'move', x: 1 });
  q.pushMove({ kind: 'mouse', action: 'move', x: 2 });
  const down = { kind: 'mouse', action: 'down', x: 3 };
  assert.deepEqual(q.pushNow(down), [{ kind: 'mouse', action: 'move', x: 2 }, down]);
  assert.equal(q.pending, false);
  assert.deepEqual(q.flush(), []);
});

test('wheel deltas add up; other modifiers flush first', () => {
  const q = new InputQueue();
  assert.deepEqual(q.pushWheel({ kind: 'wheel', x: 1, y: 1, dx: 0, dy: 10, modifiers: 0 }), []);
  assert.deepEqual(q.pushWheel({ kind: 'wheel', x: 2, y: 2, dx: 1, dy: 5, modifiers: 0 }), []);
  const out = q.pushWheel({ kind: 'wheel', x: 3, y: 3, dx: 0, dy: 1, modifiers: 2 });
  assert.deepEqual(out, [{ kind: 'wheel', x: 2, y: 2, dx: 1, dy: 15, modifiers: 0 }]);
  assert.deepEqual(q.flush(), [{ kind: 'wheel', x: 3, y: 3, dx: 0, dy: 1, modifiers: 2 }]);
});

test('stats over a one-second window', () => {
  const s = new StatsWindow({ windowMs: 1000 });
  for (let i = 0; i < 30; i += 1) {
    s.received(1000, i * 33);
    s.drawn(i * 33 + 5, 2, 20 + (i % 2) * 10);
  }
  const snap = s.snapshot(990); // the window is (now - 1000, now]
  assert.equal(snap.fps, 30);
  assert.equal(snap.kbps, 240); // 30 * 1000 bytes * 8 bits
  assert.equal(snap.decodeMs, 2);
  assert.equal(snap.latencyMs, 25);
  const later = s.snapshot(5000);
  assert.deepEqual(later, { fps: 0, kbps: 0, decodeMs: null, latencyMs: null });
  assert.equal(formatStats(later), '0 fps · 0 kbit/s · decode – · latency –');
  assert.equal(formatStats(snap), '30 fps · 240 kbit/s · decode 2.0 ms · latency 25.0 ms');
});

test('stats leave out pictures of unknown latency (sent from before the viewer joined)', () => {
  const s = new StatsWindow({ windowMs: 1000 });
  s.drawn(10, 3, null); // the frame's last keyframe, captured a minute ago
  s.drawn(40, 1, 20);
  const snap = s.snapshot(100);
  assert.equal(snap.fps, 2);
  assert.equal(snap.decodeMs, 2);
  assert.equal(snap.latencyMs, 20);
  s.drawn(200, 1, null);
  assert.equal(new StatsWindow().snapshot(0).latencyMs, null);
});
