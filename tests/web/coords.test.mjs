import { test } from 'node:test';
import assert from 'node:assert/strict';
import { contentBox, mapToFrame, pictureBox, wheelPixels } from '../../web/lib/coords.js';

const box = (left, top, width, height) => ({ left, top, width, height });

test('a canvas shown at the frame CSS size maps 1:1', () => {
  const b = box(10, 20, 640, 400);
  assert.deepEqual(mapToFrame(10, 20, b, 640, 400), { x: 0, y: 0, inside: true });
  assert.deepEqual(mapToFrame(330, 220, b, 640, 400), { x: 320, y: 200, inside: true });
});

test('a canvas shown at half size maps to twice the coordinates', () => {
  const b = box(0, 0, 320, 200);
  assert.deepEqual(mapToFrame(160, 100, b, 640, 400), { x: 320, y: 200, inside: true });
  assert.deepEqual(mapToFrame(0.5, 0.25, b, 640, 400), { x: 1, y: 0.5, inside: true });
});

test('a stretched canvas (fill) maps each axis on its own', () => {
  const b = box(0, 0, 1280, 400);
  assert.deepEqual(mapToFrame(640, 200, b, 640, 400), { x: 320, y: 200, inside: true });
});

test('object-fit contain: letterbox bars are outside and clamp to the edge', () => {
  // 640x400 picture in a 800x400 box: scale 1, bars of 80 px left and right.
  const b = box(0, 0, 800, 400);
  assert.deepEqual(pictureBox(b, 640, 400, 'contain'), { left: 80, top: 0, width: 640, height: 400 });
  assert.deepEqual(mapToFrame(80, 0, b, 640, 400, 'contain'), { x: 0, y: 0, inside: true });
  assert.deepEqual(mapToFrame(400, 200, b, 640, 400, 'contain'), { x: 320, y: 200, inside: true });
  assert.deepEqual(mapToFrame(40, 200, b, 640, 400, 'contain'), { x: 0, y: 200, inside: false });
  assert.deepEqual(mapToFrame(790, 200, b, 640, 400, 'contain'), { x: 639.99, y: 200, inside: false });
  // taller box: bars top and bottom, scale 0.5
  const t = box(0, 0, 320, 400);
  assert.deepEqual(pictureBox(t, 640, 400, 'contain'), { left: 0, top: 100, width: 320, height: 200 });
  assert.deepEqual(mapToFrame(160, 200, t, 640, 400, 'contain'), { x: 320, y: 200, inside: true });
});

test('object-fit none and scale-down', () => {
  const big = box(0, 0, 1000, 1000);
  assert.deepEqual(pictureBox(big, 640, 400, 'none'), { left: 180, top: 300, width: 640, height: 400 });
  assert.deepEqual(pictureBox(big, 640, 400, 'scale-down'), { left: 180, top: 300, width: 640, height: 400 });
  const small = box(0, 0, 320, 200);
  assert.deepEqual(pictureBox(small, 640, 400, 'scale-down'), { left: 0, top: 0, width: 320, height: 200 });
});

test('points outside are clamped into the frame', () => {
  const b = box(100, 100, 640, 400);
  assert.deepEqual(mapToFrame(0, 0, b, 640, 400), { x: 0, y: 0, inside: false });
  assert.deepEqual(mapToFrame(5000, 5000, b, 640, 400), { x: 639.99, y: 399.99, inside: false });
  assert.equal(mapToFrame(740, 300, b, 640, 400).inside, false); // the right edge itself is outside
});

test('a zero-size box or an unknown frame size is not a point', () => {
  assert.deepEqual(mapToFrame(1, 1, box(0, 0, 0, 0), 640, 400), { x: 0, y: 0, inside: false });
  assert.deepEqual(mapToFrame(1, 1, box(0, 0, 10, 10), 0, 0), { x: 0, y: 0, inside: false });
});

test('content box removes border and padding', () => {
  const b = contentBox(box(10, 10, 660, 420), { borderLeft: 2, borderRight: 2, paddingLeft: 8, paddingRight: 8,
    borderTop: 5, borderBottom: 5, paddingTop: 5, paddingBottom: 5 });
  assert.deepEqual(b, { left: 20, top: 20, width: 640, height: 400 });
  assert.deepEqual(mapToFrame(20, 20, b, 640, 400), { x: 0, y: 0, inside: true });
});

test('wheel deltas in lines and pages become pixels', () => {
  assert.equal(wheelPixels(3, 0), 3);
  assert.equal(wheelPixels(3, 1), 120);
  assert.equal(wheelPixels(1, 2, { pageHeight: 400 }), 400);
});
