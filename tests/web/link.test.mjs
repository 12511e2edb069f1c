// The link in a viewer's info() (web/lib/decoder.js, issue 18): what arrived over the last few seconds, and
// whether the server is skipping pictures for it (a slow link: keyframes at the rate it carries them).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { FrameDecoder, LINK_WINDOW_MS, SLOW_HOLD_MS } from '../../web/lib/decoder.js';
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
