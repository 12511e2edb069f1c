// One frame's decoding and drawing (web/lib/decoder.js) with a stand-in VideoDecoder and canvas: the canvas is
// sized only on a change, pictures are drawn and let go, a decoder that falls behind or cannot be configured, a
// patch message's copy (a scroll) drawn from the canvas onto itself before its PNG.
import { test, beforeEach } from 'node:test';
import assert from 'node:assert/strict';
import { FrameDecoder, MAX_DECODE_QUEUE, webCodecsAvailable } from '../../web/lib/decoder.js';
import { FORMAT_COPY, FORMAT_PNG, encodePatchPayload } from '../../web/lib/patches.js';
import { FakeCanvas, decoders, installWebCodecs, until } from './fakes.mjs';

installWebCodecs();
beforeEach(() => { decoders.length = 0; });

const CONFIG = { type: 'video-config', frame: 'f1', slot: 5, codec: 'avc1.42C01F', width: 640, height: 400,
  css_width: 320, css_height: 200 };

function frameDecoder(canvas = new FakeCanvas(), opts = {}) {
  const asks = [];
  const errors = [];
  const d = new FrameDecoder(canvas, { onKeyframeNeeded: (r) => asks.push(r), onError: (e) => errors.push(e),
    ...opts });
  return { d, canvas, asks, errors };
}

const picture = (sequence, keyframe = false, captureUs = sequence) => ({ sequence, keyframe, captureUs,
  payload: new Uint8Array([0, 0, 0, 1]) });

test('WebCodecs is found when both globals are there', () => {
  assert.equal(webCodecsAvailable(), true);
});

test('video-config sizes the canvas once; the same codec and size keep the decoder', () => {
  const { d, canvas } = frameDecoder();
  assert.deepEqual(canvas.contextArgs, ['2d', { alpha: false }]);
  d.configure(CONFIG);
  assert.deepEqual([canvas.width, canvas.height, canvas.sizeSets], [640, 400, 2]);
  assert.deepEqual(canvas.style, { width: '320px', aspectRatio: '320 / 200' });
  d.configure({ ...CONFIG, slot: 6 }); // a re-watch: nothing to resize, nothing to rebuild (keeps the picture)
  assert.equal(canvas.sizeSets, 2);
  assert.equal(decoders.length, 1);
  d.configure({ ...CONFIG, width: 1280, height: 800 });
  assert.equal(decoders.length, 2);
  assert.equal(decoders[0].state, 'closed');
  assert.equal(d.info().decoderResets, 2);
  assert.deepEqual(d.info().config, { ...CONFIG, width: 1280, height: 800 });
});

test('before its video-config the frame-state\'s CSS size lays the canvas out; the video-config rules after', () => {
  const { d, canvas } = frameDecoder();
  d.reserve(1280, 800);
  assert.deepEqual([canvas.style, canvas.sizeSets], [{ width: '1280px', aspectRatio: '1280 / 800' }, 0]);
  d.reserve(undefined, undefined); // (a service before the extension)
  d.reserve(-1, 800);
  assert.deepEqual(canvas.style, { width: '1280px', aspectRatio: '1280 / 800' });
  d.configure(CONFIG);
  d.reserve(1280, 800); // a later frame-state: the pictures' size stands
  assert.deepEqual(canvas.style, { width: '320px', aspectRatio: '320 / 200' });
  const fixed = frameDecoder(new FakeCanvas(), { sizeCanvas: false });
  fixed.d.reserve(1280, 800);
  assert.deepEqual(fixed.canvas.style, {});
});

test('sizeCanvas false leaves the CSS size alone; a null canvas decodes without drawing', () => {
  const { canvas, d } = frameDecoder(new FakeCanvas(), { sizeCanvas: false });
  d.configure(CONFIG);
  assert.deepEqual(canvas.style, {});
  const bare = frameDecoder(null).d;
  bare.configure(CONFIG);
  bare.onPicture(picture(1, true), 20);
  decoders.at(-1).emit({ timestamp: 1 });
  assert.equal(bare.info().drawn, 1);
});

test('a picture is drawn at its size, counted and closed; one from before the join has no latency', () => {
  const { d, canvas } = frameDecoder();
  const traced = [];
  d.tracer = (e) => traced.push(e);
  d.configure(CONFIG);
  const old = d.liveFromUs - 60e6; // the frame's last keyframe, captured a minute before we joined
  d.onPicture(picture(1, true, old), 1000);
  const frame = decoders[0].emit({ timestamp: old, width: 640, height: 400 });
  assert.equal(frame.closed, true);
  assert.deepEqual(canvas.calls, [['drawImage', frame, 0, 0, 640, 400]]);
  const info = d.info();
  assert.equal(info.drawn, 1);
  assert.equal(info.decoded, 1);
  assert.equal(info.lastDraw.captureUs, old);
  assert.equal(info.stats.latencyMs, null);
  assert.deepEqual(traced, [{ sequence: 1, keyframe: true, action: 'decode', gap: false, requestKeyframe: false },
    { drawn: old }]);
  const live = d.liveFromUs + 1;
  d.onPicture(picture(2, false, live), 500);
  decoders[0].emit({ timestamp: live, width: 320, height: 200 }); // a smaller picture resizes the canvas
  assert.deepEqual([canvas.width, canvas.height], [320, 200]);
  assert.ok(d.info().stats.latencyMs !== null);
});

test('a decoder more than MAX_DECODE_QUEUE behind drops deltas and asks for a keyframe', () => {
  const { d, asks } = frameDecoder();
  d.configure(CONFIG);
  d.onPicture(picture(1, true), 100);
  decoders[0].decodeQueueSize = MAX_DECODE_QUEUE + 1;
  d.onPicture(picture(2), 100);
  assert.deepEqual(asks, ['decoder-backlog']);
  assert.equal(d.info().gaps, 1);
  assert.equal(d.info().keyframeRequests, 1);
  assert.equal(d.info().waitingForKeyframe, true);
  d.onPicture(picture(3, true), 100); // a keyframe is decoded even with a long queue
  assert.deepEqual(decoders[0].chunks.map((c) => [c.type, c.timestamp]), [['key', 1], ['key', 3]]);
});

test('a codec the browser cannot configure is a fatal decoder-error and no decoder', () => {
  const { d, errors } = frameDecoder();
  d.configure({ ...CONFIG, codec: 'bogus' });
  assert.deepEqual(errors, [{ error: 'TypeError: unsupported codec', fatal: true }]);
  assert.equal(d.info().decoderState, null);
  d.onPicture(picture(1, true), 10); // a keyframe tries again, and fails again
  assert.equal(errors.length, 2);
});

test('reset waits for a keyframe without asking; dispose closes the decoder', () => {
  const { d, asks } = frameDecoder();
  d.configure(CONFIG);
  d.onPicture(picture(1, true), 10);
  d.reset();
  d.onPicture(picture(2), 10); // waiting: dropped, and too soon to ask (the service sends one after a watch)
  assert.deepEqual(asks, []);
  assert.equal(d.info().dropped, 1);
  d.dispose();
  assert.equal(decoders[0].state, 'closed');
  assert.equal(d.info().decoderState, null);
});

test('a copy is drawn from the canvas onto itself, before the PNG of its message', async () => {
  // createImageBitmap stand-in: the "image" is u16 width | u16 height.
  globalThis.createImageBitmap = async (blob) => {
    const view = new DataView(await blob.arrayBuffer());
    return { width: view.getUint16(0), height: view.getUint16(2), closed: false, close() { this.closed = true; } };
  };
  const { d, canvas, errors } = frameDecoder();
  d.configure(CONFIG);
  d.onPicture(picture(1, true), 100);
  const frame = decoders[0].emit({ timestamp: 1 });
  // A scroll by 40 pixels: the top 360 rows move up, the 40 that came into view are a PNG.
  d.onPatch({ sequence: 2, captureUs: 2, payload: encodePatchPayload([
    { x: 0, y: 0, width: 640, height: 360, format: FORMAT_COPY, source: { x: 0, y: 40 } },
    { x: 0, y: 360, width: 640, height: 40, format: FORMAT_PNG, data: Uint8Array.of(0x02, 0x80, 0, 40) },
  ]) }, 60);
  await until(() => canvas.calls.length === 3 || errors.length > 0);
  assert.deepEqual(errors, []);
  assert.equal(canvas.calls.length, 3);
  assert.deepEqual(canvas.calls[0], ['drawImage', frame, 0, 0, 640, 400]);
  assert.deepEqual(canvas.calls[1], ['drawImage', canvas, 0, 40, 640, 360, 0, 0, 640, 360]);
  assert.equal(canvas.calls[2][0], 'drawImage');
  assert.deepEqual(canvas.calls[2].slice(2), [0, 360]);
  assert.equal(canvas.calls[2][1].closed, true);
  assert.equal(d.info().patchesDrawn, 1);
});

test('a copy that does not fit the picture draws nothing of its message and asks for a keyframe', async () => {
  globalThis.createImageBitmap = async (blob) => {
    const view = new DataView(await blob.arrayBuffer());
    return { width: view.getUint16(0), height: view.getUint16(2), closed: false, close() { this.closed = true; } };
  };
  const { d, canvas, errors, asks } = frameDecoder();
  d.configure(CONFIG);
  d.onPicture(picture(1, true), 100);
  decoders[0].emit({ timestamp: 1 });
  d.onPatch({ sequence: 2, captureUs: 2, payload: encodePatchPayload([
    { x: 0, y: 0, width: 640, height: 360, format: FORMAT_COPY, source: { x: 0, y: 41 } },  // 41 + 360 > 400
    { x: 0, y: 360, width: 640, height: 40, format: FORMAT_PNG, data: Uint8Array.of(0x02, 0x80, 0, 40) },
  ]) }, 60);
  await until(() => errors.length > 0);
  assert.equal(canvas.calls.length, 1, 'only the keyframe was drawn');
  assert.match(errors[0].error, /does not fit/);
  assert.equal(d.info().patchErrors, 1);
  assert.deepEqual(asks, ['patch-error'], 'a keyframe was asked for');
});
