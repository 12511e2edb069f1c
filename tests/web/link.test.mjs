// The link in a viewer's info() (web/lib/decoder.js, issue 18): what arrived over the last few seconds, whether
// the server sends it the frame's light stream and its measure of the link (both from video-config), and whether
// the server is skipping pictures for it (a jump in one stream's sequence); and the overlay's line about it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { FrameDecoder, LINK_WINDOW_MS, SLOW_HOLD_MS } from '../../web/lib/decoder.js';
import { formatLink } from '../../web/lib/stats.js';
import { FakeCanvas, installWebCodecs } from './fakes.mjs';

installWebCodecs();

const CONFIG = { type: 'video-config', frame: 'f1', slot: 5, codec: 'avc1.42C01F', width: 640, height: 400,
  css_width: 320, css_height: 200 };

function decoder() {
  const d = new FrameDecoder(new FakeCanvas(), { onKeyframeNeeded: () => {}, onError: () => {} });
  d.configure(CONFIG);
  return d;
}

test('the link rate is what arrived over the window', () => {
  const d = decoder();
  for (let i = 0; i < 30; i += 1) d.arrived({ sequence: i + 1 }, 12500, 1000 + i * 100); // 375 kB in 3 s
  assert.equal(d.linkInfo(3900).kbps, 375000 * 8 / 1000 / (LINK_WINDOW_MS / 1000));
  assert.equal(d.linkInfo(3900).keyframesOnly, false, 'consecutive pictures: the full stream');
});

test('a sequence jump says the server skipped pictures for this viewer, until SLOW_HOLD_MS without one', () => {
  const d = decoder();
  d.arrived({ sequence: 7 }, 100, 1000);
  d.arrived({ sequence: 8 }, 100, 1100);
  d.arrived({ sequence: 20 }, 100, 1200); // the keyframe it resumed at
  assert.equal(d.linkInfo(1300).keyframesOnly, true);
  d.arrived({ sequence: 21 }, 100, 1300);
  assert.equal(d.linkInfo(1200 + SLOW_HOLD_MS - 1).keyframesOnly, true);
  assert.equal(d.linkInfo(1200 + SLOW_HOLD_MS).keyframesOnly, false);
});

test('a new video-config starts the sequence afresh: a re-watch is not a skip', () => {
  const d = decoder();
  d.arrived({ sequence: 7 }, 100, 1000);
  d.configure(CONFIG);
  d.arrived({ sequence: 400 }, 100, 1100);
  assert.equal(d.linkInfo(1200).keyframesOnly, false);
  assert.equal(d.info().link.keyframesOnly, false);
});

const LIGHT = { ...CONFIG, width: 320, height: 200, stream: 'light', link_kbps: 870 };

test('the light stream and the server\'s measure of the link come from video-config', () => {
  const d = decoder();
  assert.deepEqual(d.linkInfo(1000), { kbps: 0, light: false, serverKbps: null, skipped: false,
    keyframesOnly: false });
  d.configure(LIGHT);
  assert.deepEqual(d.linkInfo(1000), { kbps: 0, light: true, serverKbps: 870, skipped: false,
    keyframesOnly: false });
  assert.equal(d.info().link.light, true);
  d.configure({ ...LIGHT, link_kbps: undefined }); // the server had no measure (not given)
  assert.equal(d.linkInfo(1000).serverKbps, null);
  assert.equal(d.linkInfo(1000).light, true);
  d.configure(CONFIG); // the full stream again: its config has neither field
  assert.deepEqual(d.linkInfo(1000), { kbps: 0, light: false, serverKbps: null, skipped: false,
    keyframesOnly: false });
});

test('a skip on the light stream is a skip, not keyframes only', () => {
  const d = decoder();
  d.configure(LIGHT);
  d.arrived({ sequence: 1 }, 100, 1000);
  d.arrived({ sequence: 5 }, 100, 1100);
  assert.deepEqual([d.linkInfo(1200).skipped, d.linkInfo(1200).keyframesOnly], [true, false]);
  d.configure(CONFIG); // back to the full stream: its own numbering starts, no skip
  d.arrived({ sequence: 900 }, 100, 1300);
  d.arrived({ sequence: 901 }, 100, 1400);
  assert.equal(d.linkInfo(1100 + SLOW_HOLD_MS).skipped, false);
});

test('the overlay\'s line: the stream, the server\'s measure and what arrives', () => {
  const light = { kbps: 812.4, light: true, serverKbps: 870, skipped: false, keyframesOnly: false };
  assert.equal(formatLink({ width: 1280, height: 800 }, light),
    'light stream 1280x800 · link ~870 kbit/s · 812 kbit/s arriving');
  assert.equal(formatLink({ width: 1280, height: 800 }, { ...light, serverKbps: null }),
    'light stream 1280x800 · 812 kbit/s arriving');
  const full = { kbps: 2400, light: false, serverKbps: null, skipped: false, keyframesOnly: false };
  assert.equal(formatLink({ width: 2560, height: 1600 }, full), 'full stream · 2400 kbit/s arriving');
  assert.equal(formatLink(null, { ...full, skipped: true, keyframesOnly: true }),
    'full stream · 2400 kbit/s arriving · skipping');
  assert.equal(formatLink(null, undefined), '');
});
