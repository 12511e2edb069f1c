// Routing (web/lib/router.js): slots learnt from video-config per connection, video messages to the frame of
// their slot, frame-state and control kept on their frame, what is passed on to the client's listeners.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Router, WatchedFrame } from '../../web/lib/router.js';
import { encodeVideoMessage } from '../../web/lib/header.js';

/** A decoder stand-in that records what the router gave it. */
function video() {
  const v = { got: [], configured: [], reserved: [], resets: 0, disposed: 0 };
  Object.assign(v, {
    configure: (msg) => { v.configured.push(msg); v.config = msg; },
    reserve: (width, height) => v.reserved.push([width, height]),
    onPicture: (pic, bytes) => v.got.push([pic.sequence, bytes]),
    reset: () => { v.resets += 1; },
    dispose: () => { v.disposed += 1; },
    info: () => ({ config: v.config ?? null, drawn: v.got.length }),
  });
  return v;
}

function routerWith(...ids) {
  const r = new Router();
  for (const id of ids) r.add(new WatchedFrame(id, video()));
  return r;
}

const config = (frame, slot) => ({ type: 'video-config', frame, slot, codec: 'avc1.42C01F', width: 8, height: 8 });
const pic = (slot, sequence, extra = {}) => encodeVideoMessage({ slot, sequence, captureUs: 1, keyframe: true,
  payload: new Uint8Array(4), ...extra });

test('video messages go to the frame whose video-config named their slot', () => {
  const r = routerWith('a', 'b');
  assert.equal(r.route(config('a', 1)), true);
  assert.equal(r.route(config('b', 2)), true);
  r.routeBinary(pic(1, 10).buffer);
  r.routeBinary(pic(2, 20).buffer);
  r.routeBinary(pic(3, 30).buffer); // nobody's slot
  assert.deepEqual(r.get('a').video.got, [[10, 20]]);
  assert.deepEqual(r.get('b').video.got, [[20, 20]]);
  assert.equal(r.get('a').slot, 1);
  assert.deepEqual(r.get('a').video.configured, [config('a', 1)]);
});

test('a new slot for a frame frees the old one', () => {
  const r = routerWith('a');
  r.route(config('a', 1));
  r.route(config('a', 4));
  r.routeBinary(pic(1, 1).buffer);
  r.routeBinary(pic(4, 2).buffer);
  assert.deepEqual(r.get('a').video.got.map(([s]) => s), [2]);
  assert.deepEqual([...r.slots.keys()], [4]);
});

test('short, foreign-kind and unparseable binary messages are ignored', () => {
  const r = routerWith('a');
  r.route(config('a', 1));
  r.routeBinary(new Uint8Array(3).buffer);
  r.routeBinary(pic(1, 5, { kind: 3 }).buffer);
  r.routeBinary('text');
  assert.deepEqual(r.get('a').video.got, []);
});

test('frame-state and control are kept on their frame; a video-config of an unwatched frame is not passed on', () => {
  const r = routerWith('a');
  const state = { type: 'frame-state', frame: 'a', state: 'live', viewers: 1, width: 640, height: 400 };
  const control = { type: 'control', frame: 'a', driver: 'ana', you: false };
  assert.equal(r.route(state), true);
  assert.equal(r.route(control), true);
  assert.equal(r.get('a').state, state);
  assert.deepEqual(r.get('a').video.reserved, [[640, 400]]); // its place on the page, before any video-config
  assert.equal(r.get('a').control, control);
  assert.equal(r.route(config('gone', 3)), false);
  assert.equal(r.slots.size, 0);
  // Everything else goes on, whether or not it names a watched frame.
  for (const msg of [{ type: 'frame-state', frame: 'other', state: 'live' }, { type: 'error', code: 'forbidden' },
    { type: 'input-ack', frame: 'a', seq: 1 }, { type: 'something-new' }]) {
    assert.equal(r.route(msg), true, msg.type);
  }
  assert.equal(r.get('a').state, state);
});

test('a lost connection forgets every slot and resets every decoder; remove frees the slot', () => {
  const r = routerWith('a', 'b');
  r.route(config('a', 1));
  r.route(config('b', 2));
  r.disconnected();
  assert.equal(r.slots.size, 0);
  assert.deepEqual([r.get('a').slot, r.get('b').slot], [null, null]);
  assert.deepEqual([r.get('a').video.resets, r.get('b').video.resets], [1, 1]);
  r.routeBinary(pic(1, 1).buffer);
  assert.deepEqual(r.get('a').video.got, []);
  r.route(config('a', 1));
  const a = r.remove('a');
  assert.equal(a.id, 'a');
  assert.equal(r.remove('a'), undefined);
  r.routeBinary(pic(1, 2).buffer);
  assert.deepEqual(a.video.got, []);
  r.dispose();
  assert.equal(r.get('b').video.disposed, 1);
});

test('info puts the frame, its slot and its messages before the decoder\'s account', () => {
  const r = routerWith('a');
  r.route(config('a', 7));
  const state = { type: 'frame-state', frame: 'a', state: 'live' };
  r.route(state);
  assert.deepEqual(Object.entries(r.get('a').info()), [['frame', 'a'], ['slot', 7], ['config', config('a', 7)],
    ['state', state], ['control', null], ['offscreen', false], ['drawn', 0]]);
});
