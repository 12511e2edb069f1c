// Patch messages in the viewer (web/lib/patches.js and the decoder's use of them), with stand-ins: the payload
// parsed and built, pictures and patches presented in sequence order, a gap never drawing a patch, a patch
// that fails to decode asking for a keyframe and turning the client video-only, and hello's features. Copies
// (format 2, a scroll): parsed and built, refused when malformed, resolved without an image.
import { test, beforeEach } from 'node:test';
import assert from 'node:assert/strict';
import { FakeCanvas, FakeSocket, b64url, decoders, installWebCodecs, sockets, tick, until } from './fakes.mjs';
import { FrameDecoder } from '../../web/lib/decoder.js';
import {
  FEATURE_COPIES, FEATURE_PATCHES, FORMAT_COPY, FORMAT_PNG, KIND_PATCH, PatchError, PresentQueue, decodePatches,
  encodePatchPayload, parsePatchPayload,
} from '../../web/lib/patches.js';

installWebCodecs();
// createImageBitmap stand-in: the "image" bytes are [width, height]; a first byte 0xee fails to decode.
globalThis.createImageBitmap = async (blob) => {
  const bytes = new Uint8Array(await blob.arrayBuffer());
  if (bytes[0] === 0xee) throw new Error('The source image could not be decoded.');
  return { width: bytes[0], height: bytes[1], closed: false, close() { this.closed = true; } };
};
beforeEach(() => { decoders.length = 0; sockets.length = 0; });

const CONFIG = { type: 'video-config', frame: 'f1', slot: 5, codec: 'avc1.42C01F', width: 640, height: 400,
  css_width: 320, css_height: 200 };
const rect = (x, y, w, h, data = new Uint8Array([w, h])) => ({ x, y, width: w, height: h, format: FORMAT_PNG, data });
const copy = (x, y, w, h, sx, sy) => ({ x, y, width: w, height: h, format: FORMAT_COPY, source: { x: sx, y: sy } });
const patchMsg = (sequence, rects, captureUs = sequence) => ({ kind: KIND_PATCH, sequence, keyframe: false,
  captureUs, payload: encodePatchPayload(rects) });
const picture = (sequence, keyframe = false, captureUs = sequence) => ({ sequence, keyframe, captureUs,
  payload: new Uint8Array([0, 0, 0, 1]) });

function frameDecoder(opts = {}) {
  const canvas = new FakeCanvas();
  const asks = [];
  const errors = [];
  const failures = [];
  const d = new FrameDecoder(canvas, { onKeyframeNeeded: (r) => asks.push(r), onError: (e) => errors.push(e),
    onPatchFailure: (e) => failures.push(e), ...opts });
  d.configure(CONFIG);
  return { d, canvas, asks, errors, failures };
}

const drawn = (canvas) => canvas.calls.filter((c) => c[0] === 'drawImage').map((c) => (c[1].timestamp !== undefined
  ? `video ${c[1].timestamp}` : `patch ${c[2]},${c[3]}`));

test('a payload round-trips; the worked example of PROTOCOL.md parses', () => {
  const rects = [rect(200, 96, 24, 32), rect(0, 0, 1, 1, new Uint8Array([1, 1, 9]))];
  const parsed = parsePatchPayload(encodePatchPayload(rects));
  assert.deepEqual(parsed.map((r) => [r.x, r.y, r.width, r.height, r.format, [...r.data]]),
    [[200, 96, 24, 32, 1, [24, 32]], [0, 0, 1, 1, 1, [1, 1, 9]]]);
  const example = Uint8Array.from([0x00, 0x01, 0x00, 0xc8, 0x00, 0x60, 0x00, 0x18, 0x00, 0x20, 0x01, 0x00,
    0x00, 0x00, 0x00, 0x02, 0xaa, 0xbb]);
  assert.deepEqual(parsePatchPayload(example).map((r) => [r.x, r.y, r.width, r.height, [...r.data]]),
    [[200, 96, 24, 32, [0xaa, 0xbb]]]);
});

test('a cut or padded payload is refused', () => {
  const full = encodePatchPayload([rect(1, 2, 3, 4)]);
  for (const bad of [full.subarray(0, 1), full.subarray(0, 9), full.subarray(0, full.length - 1),
    Uint8Array.from([...full, 0])]) {
    assert.throws(() => parsePatchPayload(bad), PatchError);
  }
});

test('a copy then a PNG round-trips; a copy is its 4 source bytes', () => {
  const payload = encodePatchPayload([copy(0, 0, 640, 360, 0, 40), rect(0, 360, 640, 40, new Uint8Array([7, 8]))]);
  assert.deepEqual([...payload.subarray(0, 2 + 14 + 4)], [0x00, 0x02,
    0x00, 0x00, 0x00, 0x00, 0x02, 0x80, 0x01, 0x68, 0x02, 0x00, 0x00, 0x00, 0x00, 0x04, // x y w h format=2 length=4
    0x00, 0x00, 0x00, 0x28]); // source_x=0 source_y=40
  const parsed = parsePatchPayload(payload);
  assert.deepEqual(parsed.map((r) => [r.x, r.y, r.width, r.height, r.format, [...r.data], r.source]),
    [[0, 0, 640, 360, FORMAT_COPY, [0, 0, 0, 40], { x: 0, y: 40 }], [0, 360, 640, 40, FORMAT_PNG, [7, 8], undefined]]);
  assert.deepEqual(parsePatchPayload(encodePatchPayload(parsed)), parsed);
  assert.deepEqual(parsePatchPayload(encodePatchPayload([copy(300, 200, 1, 2, 65535, 258)]))[0].source,
    { x: 65535, y: 258 });
});

test('a copy whose length is not 4, or that is not the first rectangle, is refused', () => {
  for (const length of [0, 3, 5]) {
    const bad = encodePatchPayload([{ ...rect(0, 0, 8, 8, new Uint8Array(length)), format: FORMAT_COPY }]);
    assert.throws(() => parsePatchPayload(bad), (err) => err instanceof PatchError && /copy.*not 4/.test(err.message));
  }
  const late = encodePatchPayload([rect(0, 0, 2, 2), copy(0, 0, 8, 8, 0, 4)]);
  assert.throws(() => parsePatchPayload(late), (err) => err instanceof PatchError && /first/.test(err.message));
  const twice = encodePatchPayload([copy(0, 0, 8, 8, 0, 4), copy(0, 8, 8, 8, 0, 12)]);
  assert.throws(() => parsePatchPayload(twice), PatchError);
});

test('decodePatches resolves a copy without decoding an image; the queue lets go of it without one', async () => {
  const decoded = [];
  const decodeImage = async (data) => {
    decoded.push([...data]);
    return { width: data[0], height: data[1], close() {} };
  };
  const rects = parsePatchPayload(encodePatchPayload([copy(0, 0, 64, 40, 0, 8), rect(0, 40, 64, 8,
    new Uint8Array([64, 8]))]));
  const patches = await decodePatches(rects, decodeImage);
  assert.deepEqual(decoded, [[64, 8]]); // the PNG only
  assert.deepEqual(patches[0], { x: 0, y: 0, width: 64, height: 40, source: { x: 0, y: 8 } });
  assert.equal(patches[1].image.width, 64);
  // A copy beside a broken image still rejects, and the decoded images are let go.
  const closed = [];
  await assert.rejects(decodePatches([copy(0, 0, 4, 4, 0, 1), rect(0, 4, 2, 2), { ...rect(0, 6, 2, 2), format: 9 }],
    async () => ({ width: 2, height: 2, close() { closed.push(true); } })), /unknown patch format 9/);
  assert.deepEqual(closed, [true]);
  const q = new PresentQueue(() => {});
  q.addVideo(1);
  q.patchReady(q.addPatch(2), patches);
  q.clear();
  q.patchReady({ kind: 'patch' }, patches); // an entry already forgotten
});

test('decodePatches waits for every image and refuses a wrong size or a broken image', async () => {
  const ok = await decodePatches([rect(5, 6, 2, 3), rect(7, 8, 4, 4)]);
  assert.deepEqual(ok.map((p) => [p.x, p.y, p.image.width]), [[5, 6, 2], [7, 8, 4]]);
  await assert.rejects(decodePatches([rect(0, 0, 2, 2, new Uint8Array([3, 2]))]), PatchError);
  await assert.rejects(decodePatches([rect(0, 0, 2, 2), rect(0, 0, 2, 2, new Uint8Array([0xee]))]));
});

test('the present queue draws in arrival order whatever finishes first', () => {
  const out = [];
  const q = new PresentQueue((e) => out.push(e.kind === 'video' ? `v${e.captureUs}` : `p${e.captureUs}`));
  q.addVideo(1);
  const p2 = q.addPatch(2);
  q.addVideo(3);
  q.patchReady(p2, []); // the patch is ready before the picture in front of it
  assert.deepEqual(out, []);
  q.videoDecoded({ timestamp: 1, close() {} });
  assert.deepEqual(out, ['v1', 'p2']);
  q.videoDecoded({ timestamp: 3, close() {} });
  assert.deepEqual(out, ['v1', 'p2', 'v3']);
  assert.equal(q.length, 0);
});

test('patches are drawn after the picture before them and before the one after, all of a message together',
  async () => {
    const { d, canvas } = frameDecoder();
    d.onPicture(picture(1, true), 100);
    d.onPatch(patchMsg(2, [rect(10, 20, 2, 2), rect(30, 40, 3, 3)]), 50);
    d.onPicture(picture(3), 100);
    await tick();
    assert.deepEqual(drawn(canvas), []); // the keyframe is still decoding: the patch waits for it
    decoders[0].emit({ timestamp: 1 });
    await until(() => drawn(canvas).length === 3);
    assert.deepEqual(drawn(canvas), ['video 1', 'patch 10,20', 'patch 30,40']);
    decoders[0].emit({ timestamp: 3 });
    assert.deepEqual(drawn(canvas), ['video 1', 'patch 10,20', 'patch 30,40', 'video 3']);
    assert.equal(d.info().patchesDrawn, 1);
    assert.ok(canvas.calls.filter((c) => c[0] === 'drawImage').every((c) => c[1].closed));
  });

test('after a gap a patch is never drawn: it waits for the keyframe like a delta', async () => {
  const { d, canvas, asks } = frameDecoder();
  d.onPicture(picture(1, true), 100);
  decoders[0].emit({ timestamp: 1 });
  d.onPatch(patchMsg(3, [rect(0, 0, 1, 1)]), 50); // 2 was skipped for this viewer
  d.onPatch(patchMsg(4, [rect(0, 0, 1, 1)]), 50);
  await tick();
  assert.deepEqual(drawn(canvas), ['video 1']);
  assert.deepEqual(asks, ['gap']);
  d.onPicture(picture(9, true), 100);
  d.onPatch(patchMsg(10, [rect(8, 8, 1, 1)]), 50);
  decoders[0].emit({ timestamp: 9 });
  await until(() => drawn(canvas).length === 3);
  assert.deepEqual(drawn(canvas), ['video 1', 'video 9', 'patch 8,8']);
});

test('a patch that fails to decode asks for a keyframe and reports the failure', async () => {
  const { d, canvas, asks, errors, failures } = frameDecoder();
  d.onPicture(picture(1, true), 100);
  decoders[0].emit({ timestamp: 1 });
  d.onPatch(patchMsg(2, [rect(0, 0, 1, 1, new Uint8Array([0xee]))]), 50);
  await until(() => failures.length === 1);
  assert.deepEqual(asks, ['patch-error']);
  assert.match(errors[0].error, /^patch: /);
  d.onPatch(patchMsg(3, [rect(0, 0, 1, 1)]), 50); // waiting for the keyframe: not drawn
  await tick();
  assert.deepEqual(drawn(canvas), ['video 1']);
  assert.equal(d.info().patchErrors, 1);
});

const TOKEN = `${b64url(JSON.stringify({ role: 'view', sub: 'v' }))}.mac`;

test('the client asks for patches and copies, and goes video-only (a new hello without them) after a failure', async () => {
  const { FramestreamClient } = await import('../../web/framestream.js');
  const plain = new FramestreamClient({ url: 'ws://x/ws', token: TOKEN, WebSocket: FakeSocket, patches: false });
  plain.open();
  await tick();
  assert.deepEqual(sockets[0].sent[0], { type: 'hello', token: TOKEN });
  plain.close();
  const c = new FramestreamClient({ url: 'ws://x/ws', token: TOKEN, WebSocket: FakeSocket, sizeCanvas: false,
    backoff: { baseMs: 5, maxMs: 20, jitter: 0 } });
  const off = [];
  c.on('patches-off', (detail) => off.push(detail));
  c.watch('f1', null);
  c.open();
  await tick();
  const ws = sockets[1];
  assert.deepEqual(ws.sent[0], { type: 'hello', token: TOKEN, features: ['patches', 'copies'] });
  assert.deepEqual([FEATURE_PATCHES, FEATURE_COPIES], ['patches', 'copies']);
  ws.receive({ type: 'welcome', protocol: 1, sandbox: 'local', shared_frames: true,
    features: ['patches', 'copies'] });
  ws.receive(CONFIG);
  ws.binary({ slot: 5, sequence: 1, captureUs: 1, keyframe: true });
  ws.binary({ kind: KIND_PATCH, slot: 5, sequence: 2, captureUs: 2,
    payload: encodePatchPayload([rect(0, 0, 1, 1, new Uint8Array([0xee]))]) });
  await until(() => sockets.length === 3);
  assert.equal(off.length, 1);
  assert.deepEqual(ws.closedWith, { code: 1000, reason: 'video only' });
  await until(() => sockets[2].sent.length > 0);
  assert.deepEqual(sockets[2].sent[0], { type: 'hello', token: TOKEN });
  c.close();
});
