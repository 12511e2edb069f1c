// The light stream in the viewer (web/lib/decoder.js, issue 18): a slow viewer is sent the frame at its CSS size
// (`video-config` with `stream: 'light'`). The canvas keeps the full stream's size and the light pictures are
// drawn scaled to it, so moving between the streams neither clears the canvas nor moves anything on the page.
import { test, beforeEach } from 'node:test';
import assert from 'node:assert/strict';
import { FrameDecoder, canvasSize } from '../../web/lib/decoder.js';
import { FakeCanvas, decoders, installWebCodecs } from './fakes.mjs';

installWebCodecs();
beforeEach(() => { decoders.length = 0; });

// A 1280x800 frame at dpr 2: the full stream is 2560x1600, the light one 1280x800.
const FULL = { type: 'video-config', frame: 'f1', slot: 5, codec: 'avc1.640032', width: 2560, height: 1600,
  css_width: 1280, css_height: 800 };
const LIGHT = { ...FULL, codec: 'avc1.64001f', width: 1280, height: 800, stream: 'light', link_kbps: 870 };

function frameDecoder(canvas = new FakeCanvas()) {
  const d = new FrameDecoder(canvas, { onKeyframeNeeded: () => {}, onError: () => {} });
  return { d, canvas };
}

const picture = (sequence, keyframe = false) => ({ sequence, keyframe, captureUs: sequence,
  payload: new Uint8Array([0, 0, 0, 1]) });

/** Decode and draw one picture of `width`x`height` with the decoder's current VideoDecoder. */
function show(d, sequence, width, height, keyframe = false) {
  d.onPicture(picture(sequence, keyframe), 100);
  return decoders.at(-1).emit({ timestamp: sequence, width, height });
}

test('canvasSize: the light stream keeps a canvas of its aspect and at least its size, else its own size', () => {
  const canvas = (width, height) => ({ width, height });
  assert.deepEqual(canvasSize(canvas(2560, 1600), LIGHT), { width: 2560, height: 1600 });
  assert.deepEqual(canvasSize(canvas(1280, 800), LIGHT), { width: 1280, height: 800 });
  assert.deepEqual(canvasSize(canvas(2, 2), LIGHT), { width: 1280, height: 800 }, 'a fresh canvas');
  assert.deepEqual(canvasSize(canvas(640, 400), LIGHT), { width: 1280, height: 800 }, 'smaller: the light size');
  assert.deepEqual(canvasSize(canvas(2560, 1400), LIGHT), { width: 1280, height: 800 }, 'another aspect');
  // The full stream's config sizes the canvas as it always did, whatever it was.
  assert.deepEqual(canvasSize(canvas(4000, 2500), FULL), { width: 2560, height: 1600 });
  assert.deepEqual(canvasSize(canvas(2560, 1600), { ...FULL, width: 1280, height: 800 }),
    { width: 1280, height: 800 });
});

test('to the light stream and back: the canvas keeps 2560x1600, light pictures are drawn scaled to it', () => {
  const { d, canvas } = frameDecoder();
  d.configure(FULL);
  const full = show(d, 1, 2560, 1600, true);
  assert.deepEqual([canvas.width, canvas.height, canvas.sizeSets], [2560, 1600, 2]);
  assert.deepEqual(canvas.calls.at(-1), ['drawImage', full, 0, 0, 2560, 1600]);
  const style = { ...canvas.style };

  d.configure(LIGHT); // never touches the canvas's size: that would clear it
  assert.equal(canvas.sizeSets, 2);
  assert.deepEqual(canvas.style, style, 'the page layout stays');
  assert.equal(decoders.length, 2, 'a decoder for the light stream');
  assert.equal(decoders[1].config.codedWidth, 1280);
  const light = show(d, 1, 1280, 800, true);
  const lightDelta = show(d, 2, 1280, 800);
  assert.deepEqual(canvas.calls.slice(-2), [['drawImage', light, 0, 0, 2560, 1600],
    ['drawImage', lightDelta, 0, 0, 2560, 1600]]);
  assert.deepEqual([canvas.width, canvas.height, canvas.sizeSets], [2560, 1600, 2]);
  assert.equal(d.info().drawn, 3);

  d.configure(FULL); // the full stream again: as always (same size: nothing to set)
  assert.equal(canvas.sizeSets, 2);
  assert.equal(decoders.length, 3);
  const back = show(d, 40, 2560, 1600, true);
  assert.deepEqual(canvas.calls.at(-1), ['drawImage', back, 0, 0, 2560, 1600]);
  assert.equal(canvas.sizeSets, 2);
  assert.equal(d.info().gaps, 0, 'each stream numbers its own pictures');
});

test('a viewer that joins slow gets a canvas of the light size, and the full size when the full stream comes', () => {
  const { d, canvas } = frameDecoder();
  d.configure(LIGHT);
  assert.deepEqual([canvas.width, canvas.height], [1280, 800]);
  assert.deepEqual(canvas.style, { width: '1280px', aspectRatio: '1280 / 800' });
  const light = show(d, 1, 1280, 800, true);
  assert.deepEqual(canvas.calls.at(-1), ['drawImage', light, 0, 0, 1280, 800]);
  d.configure(FULL);
  assert.deepEqual([canvas.width, canvas.height], [2560, 1600]);
  assert.deepEqual(canvas.style, { width: '1280px', aspectRatio: '1280 / 800' }, 'the same place on the page');
});

test('a frame resized while its viewer is slow: the light config of another aspect sizes the canvas', () => {
  const { d, canvas } = frameDecoder();
  d.configure(FULL);
  d.configure(LIGHT);
  d.configure({ ...LIGHT, width: 800, height: 800, css_width: 800, css_height: 800 });
  assert.deepEqual([canvas.width, canvas.height], [800, 800]);
  assert.deepEqual(canvas.style, { width: '800px', aspectRatio: '800 / 800' });
});

test('a new canvas while on the light stream gets the light size', () => {
  const { d } = frameDecoder();
  d.configure(FULL);
  d.configure(LIGHT);
  const other = new FakeCanvas();
  d.setCanvas(other);
  assert.deepEqual([other.width, other.height], [1280, 800]);
  const light = show(d, 1, 1280, 800, true);
  assert.deepEqual(other.calls.at(-1), ['drawImage', light, 0, 0, 1280, 800]);
});
