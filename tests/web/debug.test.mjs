// The client's debugging hooks (web/lib/debug.js), as the browser tests use them: lose pictures, trace what the
// viewer did with each, break the decoder (optionally wiping the canvas first), drop the connection.
import { test, beforeEach, afterEach } from 'node:test';
import assert from 'node:assert/strict';
import { FakeCanvas, FakeSocket, decoders, installWebCodecs, sockets, tick, until } from './fakes.mjs';

installWebCodecs();
const { FramestreamClient } = await import('../../web/framestream.js');

const CONFIG = { type: 'video-config', frame: 'f1', slot: 5, codec: 'avc1.42C01F', width: 640, height: 400,
  css_width: 320, css_height: 200 };

const made = [];
beforeEach(() => { sockets.length = 0; decoders.length = 0; });
afterEach(() => { for (const c of made.splice(0)) c.close(); }); // a failed test must not go on reconnecting

/** A client watching f1 (into `canvas`) on an open connection that has had its video-config. */
async function watching(canvas = null) {
  const c = new FramestreamClient({ url: 'ws://x/ws', token: 't.mac', WebSocket: FakeSocket,
    backoff: { baseMs: 5, maxMs: 20, jitter: 0 } });
  made.push(c);
  c.watch('f1', canvas);
  c.open();
  await tick();
  const ws = sockets.at(-1);
  ws.receive({ type: 'welcome' });
  ws.receive(CONFIG);
  return { c, ws };
}

test('_debugDropNext loses pictures (traced as lost); the gap that follows asks for a keyframe', async () => {
  const { c, ws } = await watching();
  const trace = [];
  assert.equal(c._debugTrace('nope', () => {}), false);
  assert.equal(c._debugTrace('f1', (e) => trace.push(e)), true);
  ws.binary({ slot: 5, sequence: 1, captureUs: 1, keyframe: true });
  c._debugDropNext('f1', 2);
  for (const sequence of [2, 3, 4]) ws.binary({ slot: 5, sequence, captureUs: sequence });
  decoders[0].emit({ timestamp: 1 });
  assert.deepEqual(trace, [
    { sequence: 1, keyframe: true, action: 'decode', gap: false, requestKeyframe: false },
    { sequence: 2, keyframe: false, action: 'lost' },
    { sequence: 3, keyframe: false, action: 'lost' },
    { sequence: 4, keyframe: false, action: 'drop', gap: true, requestKeyframe: true },
    { drawn: 1 },
  ]);
  assert.deepEqual(ws.sent.filter((m) => m.type === 'keyframe'), [{ type: 'keyframe', frame: 'f1' }]);
  c._debugTrace('f1', null);
  ws.binary({ slot: 5, sequence: 5, captureUs: 5, keyframe: true });
  assert.equal(trace.length, 5);
  c.close();
});

test('_debugCorrupt wipes the canvas and feeds the decoder junk; the next keyframe recovers', async () => {
  const canvas = new FakeCanvas();
  const { c, ws } = await watching(canvas);
  const errors = [];
  c.on('decoder-error', (d) => errors.push(d));
  assert.equal(c._debugCorrupt('nope'), false);
  ws.binary({ slot: 5, sequence: 1, captureUs: 1, keyframe: true });
  assert.equal(c._debugCorrupt('f1', { wipe: '#ff00ff' }), true);
  assert.deepEqual(canvas.calls, [['fillRect', '#ff00ff', 0, 0, 640, 400]]);
  const junk = decoders[0].chunks.at(-1);
  assert.equal(junk.type, 'key');
  assert.deepEqual([...junk.data.subarray(0, 5)], [0, 0, 0, 1, 0x65]);
  assert.equal(decoders[0].flushes, 1);
  // This stand-in swallows the junk; with no configured decoder the hook breaks it itself.
  decoders[0].close();
  assert.equal(c._debugCorrupt('f1'), true);
  assert.deepEqual(errors, [{ frame: 'f1', error: 'debug: no configured decoder' }]);
  assert.equal(c.info('f1').decoderErrors, 1);
  assert.deepEqual(ws.sent.filter((m) => m.type === 'keyframe'), [{ type: 'keyframe', frame: 'f1' }]);
  ws.binary({ slot: 5, sequence: 9, captureUs: 9, keyframe: true });
  assert.equal(decoders.length, 2);
  assert.deepEqual(decoders[1].chunks.map((k) => k.timestamp), [9]);
  c.close();
});

test('_debugDropConnection closes the socket with 4000 and the client comes back', async () => {
  const { c, ws } = await watching();
  const closes = [];
  c.on('close', (d) => closes.push(d));
  c._debugDropConnection();
  assert.deepEqual(ws.closedWith, { code: 4000, reason: 'debug drop' });
  await until(() => c.connections === 2 && sockets[1].readyState === 1);
  sockets[1].receive({ type: 'welcome' });
  assert.equal(c.state, 'open');
  assert.deepEqual(closes, [{ code: 4000, reason: 'debug drop', reconnectInMs: 5 }]);
  assert.deepEqual(sockets[1].types(), ['hello', 'watch']);
  c.close();
});
