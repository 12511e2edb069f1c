// Is the connection alive (web/lib/liveness.js, a pure policy), and what the transport does with it
// (web/lib/transport.js over a scripted WebSocket and a scripted clock): a silent connection is pinged, any message
// answers, and one that stays silent past the answer time is given up and reconnected.
import { test, afterEach } from 'node:test';
import assert from 'node:assert/strict';
import { ANSWER_MS, DEAD, IDLE_MS, Liveness, PING, QUIET, QUIET_MS } from '../../web/lib/liveness.js';
import { NO_ANSWER_CODE, NO_ANSWER_REASON, Transport } from '../../web/lib/transport.js';
import { FakeSocket, sockets, tick, until } from './fakes.mjs';

test('nothing is due before the start, nor while messages keep coming', () => {
  const l = new Liveness({ idleMs: 100, answerMs: 200 });
  assert.equal(l.check(1e6), null);
  assert.equal(l.nextCheckAt(), null);
  l.heard(5); // before the start: ignored
  assert.equal(l.check(1e6), null);
  l.start(0);
  for (let now = 0; now < 1000; now += 99) {
    l.heard(now);
    assert.equal(l.check(now + 99), null);
  }
  assert.equal(l.pings, 0);
});

test('silence sends one ping; its late answer is said once; dead only a full answer time after the ping', () => {
  const l = new Liveness({ idleMs: 100, quietMs: 50, answerMs: 200 });
  l.start(0);
  assert.equal(l.nextCheckAt(), 100);
  assert.equal(l.check(99), null);
  assert.equal(l.check(100), PING);
  assert.equal(l.pings, 1);
  assert.equal(l.nextCheckAt(), 150);
  assert.equal(l.check(149), null); // no second ping while one is out
  assert.equal(l.check(150), QUIET);
  assert.equal(l.nextCheckAt(), 300);
  assert.equal(l.check(160), null); // said once
  assert.equal(l.check(299), null);
  assert.equal(l.check(300), DEAD);
});

test('a message after the quiet says so (heard is true once), and the next silence starts over', () => {
  const l = new Liveness({ idleMs: 100, quietMs: 50, answerMs: 200 });
  l.start(0);
  assert.equal(l.check(100), PING);
  assert.equal(l.heard(120), false); // answered in time: nothing was said
  assert.equal(l.check(220), PING);
  assert.equal(l.check(270), QUIET);
  assert.equal(l.heard(280), true);
  assert.equal(l.heard(281), false);
  assert.equal(l.check(381), PING);
  assert.equal(l.pings, 3);
});

test('any message answers the ping; the next silence pings again', () => {
  const l = new Liveness({ idleMs: 100, answerMs: 200 });
  l.start(0);
  assert.equal(l.check(100), PING);
  l.heard(250);
  assert.equal(l.check(300), null);
  assert.equal(l.nextCheckAt(), 350);
  assert.equal(l.check(350), PING);
  assert.equal(l.pings, 2);
});

test('a timer that fires late pings first and waits its whole answer time: sleep is not death by itself', () => {
  const l = new Liveness({ idleMs: 100, answerMs: 200 });
  l.start(0);
  assert.equal(l.check(3_600_000), PING); // an hour asleep
  assert.equal(l.check(3_600_050), null);
  assert.equal(l.check(3_600_100), QUIET); // the default quiet time: half the answer time, at most QUIET_MS
  l.heard(3_600_150); // the pong
  assert.equal(l.check(3_600_249), null);
  // and when nothing answers after the wake, it is dead an answer time after the ping
  const m = new Liveness({ idleMs: 100, answerMs: 200 });
  m.start(0);
  assert.equal(m.check(3_600_000), PING);
  assert.equal(m.check(3_600_200), DEAD);
});

test('stop forgets the connection; defaults and bad options', () => {
  const l = new Liveness();
  assert.equal(l.idleMs, IDLE_MS);
  assert.equal(l.quietMs, QUIET_MS);
  assert.equal(l.answerMs, ANSWER_MS);
  l.start(0);
  l.stop();
  assert.equal(l.check(1e9), null);
  assert.throws(() => new Liveness({ idleMs: 0 }), RangeError);
  assert.throws(() => new Liveness({ answerMs: -1 }), RangeError);
  assert.throws(() => new Liveness({ idleMs: Number.NaN }), RangeError);
  assert.throws(() => new Liveness({ quietMs: ANSWER_MS }), RangeError);
  assert.throws(() => new Liveness({ quietMs: 0 }), RangeError);
});

// --- the transport ---------------------------------------------------------------------------------------------

const made = [];
afterEach(() => {
  for (const t of made.splice(0)) t.close();
  sockets.length = 0;
});

/** A welcomed transport on a clock the test moves (`clock.ms`), with short liveness times. */
async function welcomed() {
  const clock = { ms: 0 };
  const log = [];
  const t = new Transport({
    url: 'ws://x/ws', token: 'T', WebSocket: FakeSocket, backoff: { baseMs: 5, maxMs: 20, jitter: 0 },
    liveness: { idleMs: 30, answerMs: 60 }, now: () => clock.ms,
    onWelcome: () => log.push(['welcome']),
    onMessage: (m) => log.push(['message', m.type]),
    onBinary: () => log.push(['binary']),
    onDown: () => log.push(['down']),
    emit: (type, detail) => log.push([type, detail]),
  });
  made.push(t);
  t.open();
  await tick();
  sockets.at(-1).receive({ type: 'welcome' });
  return { t, log, clock, ws: sockets.at(-1) };
}

test('a silent connection is pinged; the pong is not passed on and keeps it open', async () => {
  const { t, log, clock, ws } = await welcomed();
  clock.ms = 30;
  await until(() => ws.types().includes('ping'));
  assert.deepEqual(ws.sent.at(-1), { type: 'ping', seq: 1 });
  clock.ms = 40;
  ws.receive({ type: 'pong', seq: 1 });
  clock.ms = 95; // past the ping's answer time, but the pong came
  await new Promise((resolve) => setTimeout(resolve, 120));
  assert.equal(t.state, 'open');
  assert.equal(ws.closedWith, undefined);
  assert.deepEqual(log, [['welcome']]); // no pong for the client
});

test('no answer: the socket is given up at once, reported as a drop, and a new one is opened', async () => {
  const { t, log, clock, ws } = await welcomed();
  clock.ms = 30;
  await until(() => ws.types().includes('ping'));
  clock.ms = 90;
  await until(() => ws.closedWith);
  assert.deepEqual(ws.closedWith, { code: 4000, reason: 'no answer' });
  assert.deepEqual(log.slice(1, 3), [['down'], ['close', { code: NO_ANSWER_CODE, reason: NO_ANSWER_REASON,
    reconnectInMs: 5 }]]);
  ws.receive({ type: 'frame-state' }); // the dead socket's late words go nowhere
  assert.equal(log.filter(([kind]) => kind === 'message').length, 0);
  await until(() => sockets.length === 2 && sockets[1].readyState === 1);
  assert.deepEqual(sockets[1].sent, [{ type: 'hello', token: 'T' }]);
  sockets[1].receive({ type: 'welcome' });
  assert.equal(t.state, 'open');
});

test('a late answer is told as quiet, and its arrival as not quiet any more; the connection stays', async () => {
  const { t, log, clock, ws } = await welcomed(); // idle 30, answer 60: quiet after 30
  clock.ms = 30;
  await until(() => ws.types().includes('ping'));
  clock.ms = 65;
  await until(() => log.some(([kind]) => kind === 'quiet'));
  assert.deepEqual(log.at(-1), ['quiet', { quiet: true }]);
  clock.ms = 70;
  ws.receive({ type: 'pong', seq: 1 });
  assert.deepEqual(log.at(-1), ['quiet', { quiet: false }]);
  assert.equal(t.state, 'open');
  assert.equal(ws.closedWith, undefined);
});

test('pictures count as answers: a connection that keeps streaming is never pinged', async () => {
  const { t, clock, ws } = await welcomed();
  for (let i = 1; i <= 12; i += 1) {
    clock.ms = i * 20; // every 20 ms, under the 30 ms idle time
    ws.receive(new Uint8Array(20).buffer);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  assert.equal(ws.types().includes('ping'), false);
  assert.equal(t.state, 'open');
});

test('closing stops the checks', async () => {
  const { t, clock, ws } = await welcomed();
  t.close();
  clock.ms = 1000;
  await new Promise((resolve) => setTimeout(resolve, 80));
  assert.equal(ws.types().includes('ping'), false);
  assert.equal(sockets.length, 1);
});
