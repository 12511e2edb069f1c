// A hidden page (lib/client.js `setHidden`, on the page's visibilitychange): every frame is watched without its
// pictures and nothing is decoded; shown again, each frame is watched anew and its canvas is `stale` (the view says
// `Updating…`) until its first picture since is drawn. So is a canvas after a lost connection.
import { test, beforeEach, afterEach } from 'node:test';
import assert from 'node:assert/strict';
import { FakeCanvas, b64url, decoders, fakeClient, installWebCodecs, sockets, tick, until } from './fakes.mjs';

installWebCodecs();
const { FramestreamClient } = await import('../../web/framestream.js');

const TOKEN = `${b64url(JSON.stringify({ role: 'view', sub: 'v' }))}.mac`;
const CONFIG = { type: 'video-config', frame: 'f1', slot: 1, codec: 'avc1.42C01F', width: 640, height: 400,
  css_width: 320, css_height: 200 };

const made = [];
const client = (opts) => fakeClient(FramestreamClient, TOKEN, made, opts);

beforeEach(() => { sockets.length = 0; decoders.length = 0; });
afterEach(() => {
  for (const c of made.splice(0)) c.close();
  delete globalThis.document;
});

/** A client watching f1 into a canvas, welcomed, with one picture drawn; and what it told of stale canvases. */
async function drawing(opts) {
  const c = client(opts);
  const stale = [];
  c.on('stale', (d) => stale.push(d));
  c.watch('f1', new FakeCanvas());
  c.open();
  await tick();
  const ws = sockets[0];
  ws.receive({ type: 'welcome' });
  ws.receive(CONFIG);
  ws.binary({ slot: 1, sequence: 1, captureUs: 1, keyframe: true });
  decoders[0].emit({ timestamp: 1 });
  assert.equal(c.info('f1').drawn, 1);
  return { c, ws, stale };
}

test('hidden, a frame is watched without pictures and nothing is decoded; shown, it is stale until its next picture', async () => {
  const { c, ws, stale } = await drawing();
  const hidden = [];
  c.on('hidden', (d) => hidden.push(d.hidden));
  c.setHidden(true);
  assert.deepEqual(ws.sent.at(-1), { type: 'watch', frame: 'f1', video: false });
  assert.deepEqual(stale, [{ frame: 'f1', stale: true }]);
  // Pictures already on their way when the page hid are not decoded, nor is a keyframe asked for.
  ws.binary({ slot: 1, sequence: 2, captureUs: 2 });
  ws.binary({ slot: 1, sequence: 3, captureUs: 3, keyframe: true });
  assert.deepEqual(decoders[0].chunks.map((k) => k.timestamp), [1]);
  assert.deepEqual(ws.types().filter((t) => t === 'keyframe'), []);
  c.setHidden(true); // (said once)
  c.setHidden(false);
  assert.deepEqual(ws.sent.at(-1), { type: 'watch', frame: 'f1' });
  assert.equal(c.info('f1').stale, true, 'the old picture is not the page until the new watch draws');
  ws.receive({ ...CONFIG, slot: 2 });
  ws.binary({ slot: 2, sequence: 9, captureUs: 9, keyframe: true });
  assert.deepEqual(decoders[0].chunks.map((k) => k.timestamp), [1, 9]);
  assert.deepEqual(stale, [{ frame: 'f1', stale: true }], 'decoded is not drawn yet');
  decoders[0].emit({ timestamp: 9 });
  assert.deepEqual(stale, [{ frame: 'f1', stale: true }, { frame: 'f1', stale: false }]);
  assert.deepEqual(hidden, [true, false]);
});

test('a connection lost leaves the canvas stale until a picture of the next one is drawn; hidden, it watches without pictures', async () => {
  const { c, ws, stale } = await drawing();
  ws.close(1006);
  await tick();
  assert.deepEqual(stale, [{ frame: 'f1', stale: true }]);
  c.setHidden(true);
  await until(() => sockets.length === 2);
  const again = sockets[1];
  await tick();
  again.receive({ type: 'welcome' });
  assert.deepEqual(again.sent.at(-1), { type: 'watch', frame: 'f1', video: false });
  c.setHidden(false);
  assert.deepEqual(again.sent.at(-1), { type: 'watch', frame: 'f1' });
  again.receive({ ...CONFIG, slot: 3 });
  again.binary({ slot: 3, sequence: 4, captureUs: 4, keyframe: true });
  decoders.at(-1).emit({ timestamp: 4 });
  assert.deepEqual(stale.at(-1), { frame: 'f1', stale: false });
});

test('the page\'s visibility drives it, from the start, unless pauseWhenHidden is false', async () => {
  const doc = new EventTarget();
  doc.visibilityState = 'hidden'; // a page opened in a background tab
  globalThis.document = doc;
  const c = client();
  const fixed = client({ pauseWhenHidden: false });
  for (const x of [c, fixed]) {
    x.watch('f1', null);
    x.open();
  }
  await until(() => sockets.length === 2);
  await tick();
  for (const ws of sockets) ws.receive({ type: 'welcome' });
  assert.deepEqual(sockets.map((ws) => ws.sent.at(-1)), [{ type: 'watch', frame: 'f1', video: false },
    { type: 'watch', frame: 'f1' }]);
  doc.visibilityState = 'visible';
  doc.dispatchEvent(new Event('visibilitychange'));
  assert.equal(c.hidden, false);
  assert.deepEqual(sockets[0].sent.at(-1), { type: 'watch', frame: 'f1' });
  assert.equal(sockets[1].sent.length, 2, 'pauseWhenHidden false: nothing more sent');
  c.close();
  doc.visibilityState = 'hidden';
  doc.dispatchEvent(new Event('visibilitychange'));
  assert.equal(c.hidden, false, 'a closed client no longer follows the page');
});

test('a canvas watched again holds an older picture: stale until the new watch draws into it', async () => {
  const { c, ws, stale } = await drawing();
  const canvas = c.router.get('f1').video.canvas;
  c.unwatch('f1');
  c.watch('f1', canvas);
  assert.deepEqual(stale, [{ frame: 'f1', stale: true }]);
  c.watch('f2', new FakeCanvas()); // a fresh canvas holds nothing older
  assert.deepEqual(stale, [{ frame: 'f1', stale: true }]);
  ws.receive({ ...CONFIG, slot: 4 });
  ws.binary({ slot: 4, sequence: 7, captureUs: 7, keyframe: true });
  decoders.at(-1).emit({ timestamp: 7 });
  assert.deepEqual(stale.at(-1), { frame: 'f1', stale: false });
});

test('over WebRTC, hiding ends the frame\'s peer connection and showing offers a new one', async () => {
  const pcs = [];
  globalThis.RTCPeerConnection = class extends EventTarget {
    constructor(config) { super(); Object.assign(this, { config, closed: false, iceGatheringState: 'new' }); pcs.push(this); }
    addTransceiver() { return { setCodecPreferences() {} }; }
    async createOffer() { return { type: 'offer', sdp: 'v=0 offer' }; }
    async setLocalDescription(d) { this.localDescription = d; this.iceGatheringState = 'complete'; }
    close() { this.closed = true; }
  };
  try {
    const c = client({ transport: 'webrtc', webrtcTimeoutMs: 60_000 });
    c.watch('f1', null);
    c.open();
    await tick();
    const ws = sockets[0];
    ws.receive({ type: 'welcome' });
    await until(() => ws.types().includes('webrtc-offer'));
    c.setHidden(true);
    assert.equal(pcs[0].closed, true);
    assert.deepEqual(ws.sent.at(-1), { type: 'watch', frame: 'f1', video: false });
    c.setHidden(false);
    await until(() => ws.types().filter((t) => t === 'webrtc-offer').length === 2);
    assert.equal(pcs.length, 2);
    assert.equal(pcs[1].closed, false);
    assert.equal(c.info('f1').transport, 'webrtc-connecting');
    c.close(); // a closed client leaves no peer connection open (nor its connect timer running)
    assert.equal(pcs[1].closed, true);
  } finally {
    delete globalThis.RTCPeerConnection;
  }
});

test('a frame whose view is out of sight is watched without pictures, on its own and beside a hidden page', async () => {
  const c = client();
  c.watch('f1', null);
  c.watch('f2', null);
  c.open();
  await tick();
  const ws = sockets[0];
  ws.receive({ type: 'welcome' });
  const watches = () => ws.sent.filter((m) => m.type === 'watch').slice(2);
  c.setOffscreen('f2', true);
  assert.deepEqual(watches(), [{ type: 'watch', frame: 'f2', video: false }]);
  assert.equal(c.info('f2').offscreen, true);
  c.setOffscreen('f2', true); // (said once)
  c.setOffscreen('nope', true); // not watched: nothing
  c.setHidden(true); // only f1 changes
  assert.deepEqual(watches().slice(1), [{ type: 'watch', frame: 'f1', video: false }]);
  c.setOffscreen('f2', false); // the page is still hidden: nothing changes
  assert.equal(watches().length, 2);
  c.setOffscreen('f1', true);
  c.setHidden(false); // f2 is in sight, f1 is not
  assert.deepEqual(watches().slice(2), [{ type: 'watch', frame: 'f2' }]);
  c.setOffscreen('f1', false);
  assert.deepEqual(watches().slice(3), [{ type: 'watch', frame: 'f1' }]);
  ws.close(1006); // a reconnect watches each as it is seen
  c.setOffscreen('f2', true);
  await until(() => sockets.length === 2);
  await tick();
  sockets[1].receive({ type: 'welcome' });
  assert.deepEqual(sockets[1].sent.slice(1), [{ type: 'watch', frame: 'f1' }, { type: 'watch', frame: 'f2', video: false }]);
});

test('a view out of sight from the start never watches its frame with pictures', async () => {
  const c = client();
  c.watch('f1', null, { offscreen: true });
  c.open();
  await tick();
  sockets[0].receive({ type: 'welcome' });
  assert.deepEqual(sockets[0].sent.slice(1), [{ type: 'watch', frame: 'f1', video: false }]);
  c.setOffscreen('f1', false);
  assert.deepEqual(sockets[0].sent.slice(2), [{ type: 'watch', frame: 'f1' }]);
});
