// The connection alone (web/lib/transport.js) over a scripted WebSocket: hello first and welcome within the
// timeout, what is passed on to the client, when it reconnects and how long it waits.
import { test, beforeEach, afterEach } from 'node:test';
import assert from 'node:assert/strict';
import { Transport, AUTH_CLOSE_CODES } from '../../web/lib/transport.js';
import { FakeSocket, sockets, tick, until } from './fakes.mjs';

const made = [];
beforeEach(() => { sockets.length = 0; });
afterEach(() => { for (const t of made.splice(0)) t.close(); }); // a failed test must not go on reconnecting

/** A transport whose callbacks are recorded, in order, in `log`. */
function transport(opts = {}) {
  const log = [];
  const t = new Transport({
    url: 'ws://x/ws', token: 'T', WebSocket: FakeSocket, backoff: { baseMs: 5, maxMs: 20, jitter: 0 },
    onWelcome: (m) => log.push(['welcome', m.type, t.state]),
    onMessage: (m) => log.push(['message', m]),
    onBinary: (d) => log.push(['binary', d.byteLength]),
    onDown: () => log.push(['down', t.state]),
    emit: (type, detail) => log.push([type, detail]),
    ...opts,
  });
  made.push(t);
  return { t, log };
}

test('hello first; messages go on only after welcome; the welcome is kept', async () => {
  const { t, log } = transport();
  t.open();
  assert.equal(t.state, 'connecting');
  await tick();
  const ws = sockets[0];
  assert.equal(ws.url, 'ws://x/ws');
  assert.equal(ws.binaryType, 'arraybuffer');
  assert.deepEqual(ws.sent, [{ type: 'hello', token: 'T' }]);
  assert.equal(t.send({ type: 'watch', frame: 'f' }), false); // not welcomed: nothing sent
  ws.receive({ type: 'welcome', protocol: 1 });
  assert.deepEqual(log, [['welcome', 'welcome', 'open']]);
  assert.deepEqual(t.welcome, { type: 'welcome', protocol: 1 });
  assert.equal(t.send({ type: 'watch', frame: 'f' }), true);
  assert.deepEqual(ws.sent.at(-1), { type: 'watch', frame: 'f' });
  ws.receive('not json');
  ws.receive({ type: 'frame-state', frame: 'f' });
  ws.receive(new Uint8Array(20).buffer);
  assert.deepEqual(log.slice(1), [['message', { type: 'frame-state', frame: 'f' }], ['binary', 20]]);
  t.close();
});

test('no welcome within the timeout closes with 4408 and reconnects', async () => {
  const { t, log } = transport({ helloTimeoutMs: 5 });
  t.open();
  await until(() => sockets[0]?.closedWith);
  await tick();
  assert.deepEqual(sockets[0].closedWith, { code: 4408, reason: 'no welcome' });
  assert.deepEqual(log.slice(0, 2), [['down', 'connecting'],
    ['close', { code: 4408, reason: 'no welcome', reconnectInMs: 5 }]]);
  t.close();
});

test('a welcome stops the hello timeout', async () => {
  const welcomed = transport({ helloTimeoutMs: 5 });
  welcomed.t.open();
  await tick();
  sockets[0].receive({ type: 'welcome' });
  const silent = transport({ helloTimeoutMs: 5 }); // its timeout is armed after the first one's
  silent.t.open();
  await until(() => sockets[1]?.closedWith);
  assert.equal(sockets[1].closedWith.code, 4408);
  assert.equal(sockets[0].closedWith, undefined);
  assert.equal(welcomed.t.state, 'open');
});

test('a welcome resets the backoff; 4429 waits at least 2 s', async () => {
  const { t, log } = transport();
  t.open();
  await tick();
  sockets[0].close(1006);
  await until(() => sockets[1]?.readyState === 1);
  sockets[1].close(1006);
  await until(() => sockets[2]?.readyState === 1);
  sockets[2].receive({ type: 'welcome' });
  sockets[2].close(4429, 'slow down');
  await tick();
  const delays = log.filter(([k]) => k === 'close').map(([, d]) => d.reconnectInMs);
  assert.deepEqual(delays, [5, 10, 2000]);
  assert.equal(t.state, 'waiting');
  assert.equal(t.connections, 3);
  t.close(); // also stops the pending reconnect
  assert.equal(t.state, 'closed');
});

test('close() ends it without a close event; a late message of the old socket is ignored', async () => {
  const { t, log } = transport();
  t.open();
  await tick();
  const ws = sockets[0];
  ws.receive({ type: 'welcome' });
  t.close();
  assert.deepEqual(ws.closedWith, { code: 1000, reason: 'bye' });
  ws.receive({ type: 'frame-state', frame: 'f' });
  await tick(); // the socket's close event has come: it is not a loss (no close event, so no reconnect)
  assert.deepEqual(log.map(([k]) => k), ['welcome']);
  assert.equal(t.timer, null);
  assert.equal(sockets.length, 1);
});

test('a refused fixed token is fatal; with reconnect off a loss is the end, but not fatal', async () => {
  for (const code of AUTH_CLOSE_CODES) {
    const { t, log } = transport();
    t.open();
    await tick();
    sockets.at(-1).close(code, '');
    await tick();
    assert.equal(t.state, 'closed');
    assert.deepEqual(log.slice(1), [['close', { code, reason: '', reconnectInMs: null }],
      ['fatal', { code, reason: 'token refused' }]]);
  }
  const { t, log } = transport({ reconnect: false });
  t.open();
  await tick();
  sockets.at(-1).close(1011, 'boom');
  await tick();
  assert.deepEqual(log.slice(1), [['close', { code: 1011, reason: 'boom', reconnectInMs: null }]]);
  assert.equal(t.state, 'closed');
});

test('a token function that fails is a loss (code 0) and is asked again on the next try', async () => {
  let calls = 0;
  const { t, log } = transport({ token: async () => {
    calls += 1;
    if (calls === 1) throw new Error('no token service');
    return 'T2';
  } });
  t.open();
  await tick();
  assert.deepEqual(log, [['down', 'connecting'],
    ['close', { code: 0, reason: 'Error: no token service', reconnectInMs: 5 }]]);
  assert.equal(sockets.length, 0);
  await until(() => sockets[0]?.sent.length === 1);
  assert.equal(calls, 2);
  assert.deepEqual(sockets[0].sent, [{ type: 'hello', token: 'T2' }]);
  assert.equal(t.token, 'T2');
  t.close();
});

test('a token function refreshes the connection before each token expires; a fixed token does not', async () => {
  const minted = [];
  const mint = () => {
    const token = `${Buffer.from(JSON.stringify({ exp: (Date.now() + 1200) / 1000 })).toString('base64url')}.sig`;
    minted.push(token);
    return token;
  };
  const { t } = transport({ token: mint });
  t.open();
  await until(() => sockets[0]?.sent.length === 1);
  sockets[0].receive({ type: 'welcome', protocol: 1 });
  // 1.2 s tokens: each is refreshed (half a second in, with a new one from the function), on the same socket.
  await until(() => sockets[0].sent.filter((m) => m.type === 'refresh').length >= 2, 3000);
  const refreshes = sockets[0].sent.filter((m) => m.type === 'refresh');
  assert.deepEqual(refreshes.map((m) => m.token), minted.slice(1, 3));
  assert.equal(sockets.length, 1); // the same socket throughout
  t.close();
  const fixed = transport().t;
  fixed.open();
  await until(() => sockets[1]?.sent.length === 1);
  sockets[1].receive({ type: 'welcome', protocol: 1 });
  assert.equal(fixed.refreshTimer, null);
  fixed.close();
});
