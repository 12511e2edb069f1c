// The client (web/framestream.js) in node, with a scripted WebSocket and a stand-in VideoDecoder: hello first,
// watch after welcome, slots, gaps and decoder errors -> keyframe requests, reconnect with backoff and re-watch,
// no reconnect after a refused token.
import { test, beforeEach, afterEach } from 'node:test';
import assert from 'node:assert/strict';
import { b64url, decoders, fakeClient, installWebCodecs, sockets, tick, until } from './fakes.mjs';
import { wallUs } from '../../web/lib/clock.js';

installWebCodecs();
const { FramestreamClient, defaultUrl } = await import('../../web/framestream.js');

const TOKEN = `${b64url(JSON.stringify({ role: 'view', sub: 'v' }))}.mac`;
const CONFIG = { type: 'video-config', frame: 'f1', slot: 5, codec: 'avc1.42C01F', width: 640, height: 400, css_width: 320, css_height: 200 };

const made = [];
const client = (opts) => fakeClient(FramestreamClient, TOKEN, made, opts);

beforeEach(() => { sockets.length = 0; decoders.length = 0; });
afterEach(() => { for (const c of made.splice(0)) c.close(); }); // a failed test must not go on reconnecting

test('the default URL is /ws on the page host, wss for https', () => {
  assert.equal(defaultUrl({ protocol: 'http:', host: '127.0.0.1:7682' }), 'ws://127.0.0.1:7682/ws');
  assert.equal(defaultUrl({ protocol: 'https:', host: 'x.test' }), 'wss://x.test/ws');
  // Behind a gateway prefix the WebSocket sits next to the page.
  assert.equal(defaultUrl({ protocol: 'https:', host: 'gw.test', href: 'https://gw.test/sandboxes/s1/#token=t' }),
    'wss://gw.test/sandboxes/s1/ws');
});

test('hello first, watch only after welcome, then decode by slot', async () => {
  const c = client();
  c.watch('f1', null);
  c.open();
  await tick();
  const ws = sockets[0];
  assert.deepEqual(ws.sent, [{ type: 'hello', token: TOKEN, features: ['patches', 'copies'] }]);
  ws.receive({ type: 'welcome', protocol: 1, sandbox: 'local', shared_frames: true });
  assert.deepEqual(ws.sent[1], { type: 'watch', frame: 'f1' });
  ws.receive(CONFIG);
  assert.deepEqual(decoders[0].config, { codec: 'avc1.42C01F', codedWidth: 640, codedHeight: 400, optimizeForLatency: true });
  ws.binary({ slot: 5, sequence: 10, captureUs: 1e15, keyframe: true, payload: new Uint8Array([0, 0, 0, 1, 0x67]) });
  ws.binary({ slot: 5, sequence: 11, captureUs: 1e15 + 1, payload: new Uint8Array([0, 0, 0, 1, 0x41]) });
  ws.binary({ slot: 9, sequence: 1, captureUs: 1, keyframe: true }); // another slot: not ours
  assert.deepEqual(decoders[0].chunks.map((k) => [k.type, k.timestamp]), [['key', 1e15], ['delta', 1e15 + 1]]);
  c.close();
});

test('a gap asks for a keyframe once and drops deltas until it comes', async () => {
  const c = client();
  c.watch('f1', null);
  c.open();
  await tick();
  const ws = sockets[0];
  ws.receive({ type: 'welcome' });
  ws.receive(CONFIG);
  ws.binary({ slot: 5, sequence: 1, captureUs: 1, keyframe: true });
  ws.binary({ slot: 5, sequence: 3, captureUs: 3 });
  ws.binary({ slot: 5, sequence: 4, captureUs: 4 });
  assert.deepEqual(ws.sent.filter((m) => m.type === 'keyframe'), [{ type: 'keyframe', frame: 'f1' }]);
  assert.equal(decoders[0].chunks.length, 1);
  ws.binary({ slot: 5, sequence: 9, captureUs: 9, keyframe: true });
  ws.binary({ slot: 5, sequence: 10, captureUs: 10 });
  assert.deepEqual(decoders[0].chunks.map((k) => k.timestamp), [1, 9, 10]);
  assert.equal(c.info('f1').gaps, 1);
  c.close();
});

test('a decoder error asks for a keyframe and a new decoder takes the keyframe', async () => {
  const c = client();
  c.watch('f1', null);
  c.open();
  await tick();
  const ws = sockets[0];
  ws.receive({ type: 'welcome' });
  ws.receive(CONFIG);
  ws.binary({ slot: 5, sequence: 1, captureUs: 1, keyframe: true });
  ws.binary({ slot: 5, sequence: 2, captureUs: 2, payload: new Uint8Array([0xee]) }); // breaks the decoder
  await tick();
  assert.equal(c.info('f1').decoderErrors, 1);
  assert.equal(ws.sent.filter((m) => m.type === 'keyframe').length, 1);
  ws.binary({ slot: 5, sequence: 3, captureUs: 3 }); // still waiting: dropped
  ws.binary({ slot: 5, sequence: 4, captureUs: 4, keyframe: true });
  assert.equal(decoders.length, 2);
  assert.deepEqual(decoders[1].chunks.map((k) => k.timestamp), [4]);
  assert.deepEqual(decoders[1].config, decoders[0].config);
  c.close();
});

test('a lost connection reconnects with backoff and watches again; slots are re-learnt', async () => {
  const c = client();
  const closes = [];
  c.on('close', (d) => closes.push(d));
  c.watch('f1', null);
  c.open();
  await tick();
  sockets[0].receive({ type: 'welcome' });
  sockets[0].receive(CONFIG);
  sockets[0].close(1011, 'boom');
  await tick();
  assert.deepEqual(closes, [{ code: 1011, reason: 'boom', reconnectInMs: 5 }]);
  await new Promise((r) => setTimeout(r, 20));
  assert.equal(sockets.length, 2);
  const ws = sockets[1];
  assert.deepEqual(ws.types(), ['hello']);
  ws.receive({ type: 'welcome' });
  assert.deepEqual(ws.types(), ['hello', 'watch']);
  ws.receive({ ...CONFIG, slot: 2 });
  ws.binary({ slot: 5, sequence: 1, captureUs: 1, keyframe: true }); // the old slot means nothing now
  ws.binary({ slot: 2, sequence: 2, captureUs: 2, keyframe: true });
  assert.deepEqual(decoders.at(-1).chunks.map((k) => k.timestamp), [2]);
  // second and third failures wait longer, then the delay is reset by a welcome
  ws.close(1006);
  await tick();
  await new Promise((r) => setTimeout(r, 20));
  sockets[2].close(1006);
  await tick();
  assert.deepEqual(closes.map((d) => d.reconnectInMs), [5, 5, 10]);
  c.close();
});

test('pictures captured before the connection\'s welcome are left out of the latency', async () => {
  const c = client();
  c.watch('f1', null);
  c.open();
  await tick();
  sockets[0].receive({ type: 'welcome' });
  sockets[0].receive(CONFIG);
  sockets[0].close(1006);
  await until(() => sockets[1]?.readyState === 1);
  const before = Math.floor(wallUs()); // captured while we were away: the service sends it from its past
  await until(() => wallUs() > before + 1);
  const ws = sockets[1];
  ws.receive({ type: 'welcome' });
  ws.receive({ ...CONFIG, slot: 2 });
  ws.binary({ slot: 2, sequence: 1, captureUs: before, keyframe: true });
  decoders.at(-1).emit({ timestamp: before });
  assert.equal(c.info('f1').drawn, 1);
  assert.equal(c.info('f1').stats.latencyMs, null);
  const live = Math.ceil(wallUs());
  ws.binary({ slot: 2, sequence: 2, captureUs: live });
  decoders.at(-1).emit({ timestamp: live });
  assert.notEqual(c.info('f1').stats.latencyMs, null);
});

test('a refused token does not reconnect; a token function is asked again each time', async () => {
  const c = client();
  const fatal = [];
  c.on('fatal', (d) => fatal.push(d));
  c.open();
  await tick();
  sockets[0].close(4401, 'bad token');
  await tick();
  await new Promise((r) => setTimeout(r, 30));
  assert.equal(sockets.length, 1);
  assert.equal(c.state, 'closed');
  assert.deepEqual(fatal, [{ code: 4401, reason: 'bad token' }]);

  let n = 0;
  const d = client({ token: async () => `${b64url(JSON.stringify({ role: 'drive', n: ++n }))}.mac` });
  d.open();
  await tick(); await tick();
  sockets[1].close(4401, 'expired');
  await new Promise((r) => setTimeout(r, 30));
  assert.equal(sockets.length, 3);
  assert.notEqual(sockets[1].sent[0].token, sockets[2].sent[0].token);
  assert.equal(d.role, 'drive');
  d.close();
});

test('input: event or events, grant, increasing seq, acks tracked', async () => {
  const c = client();
  c.open();
  await tick();
  const ws = sockets[0];
  assert.equal(c.sendInput('f1', { kind: 'text', text: 'x' }), null); // not welcomed yet: nothing sent
  ws.receive({ type: 'welcome' });
  const move = { kind: 'mouse', action: 'move', x: 1, y: 2, button: 'none', buttons: 0, clicks: 0, modifiers: 0 };
  assert.equal(c.sendInput('f1', [move]), 1);
  assert.equal(c.sendInput('f1', [move, move], { grant: 'G' }), 2);
  assert.deepEqual(ws.sent.slice(1), [
    { type: 'input', frame: 'f1', grant: TOKEN, seq: 1, event: move },
    { type: 'input', frame: 'f1', grant: 'G', seq: 2, events: [move, move] },
  ]);
  assert.equal(c.inputInFlight, 2);
  ws.receive({ type: 'input-ack', frame: 'f1', seq: 1 });
  ws.receive({ type: 'error', code: 'superseded', message: 'newer', frame: 'f1', seq: 2 });
  assert.equal(c.inputInFlight, 0);
  c.close();
});
