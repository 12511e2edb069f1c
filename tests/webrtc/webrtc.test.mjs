import { test } from 'node:test';
import assert from 'node:assert/strict';
import { WebRtcVideo, preferH264 } from '../../web/lib/webrtc.js';

// A peer connection that gathers at once and connects when told.
class FakePeerConnection extends EventTarget {
  constructor(config) {
    super();
    this.config = config;
    this.iceGatheringState = 'new';
    this.connectionState = 'new';
    this.closed = false;
    this.transceivers = [];
  }

  addTransceiver(kind, init) {
    const t = { kind, init, prefs: null, setCodecPreferences(c) { this.prefs = c; } };
    this.transceivers.push(t);
    return t;
  }

  async createOffer() { return { type: 'offer', sdp: 'v=0 offer' }; }

  async setLocalDescription(d) {
    this.localDescription = d;
    this.iceGatheringState = 'complete';
  }

  async setRemoteDescription(d) { this.remoteDescription = d; }

  connect(state = 'connected') {
    this.connectionState = state;
    this.onconnectionstatechange?.();
  }

  close() { this.closed = true; }
}

function video({ timeoutMs = 50 } = {}) {
  const sent = [];
  const fallbacks = [];
  const rtc = new WebRtcVideo({
    frameId: 'f1', send: (m) => { sent.push(m); return true; }, target: () => ({ canvas: null, ctx: null }),
    onFallback: (r) => fallbacks.push(r), connectTimeoutMs: timeoutMs, RTCPeerConnection: FakePeerConnection,
    document: null,
  });
  return { rtc, sent, fallbacks };
}

test('offers receive-only video with no ICE server and takes the answer', async () => {
  const { rtc, sent, fallbacks } = video({ timeoutMs: 10_000 });
  await rtc.start();
  assert.deepEqual(rtc.pc.config, { iceServers: [] });
  assert.deepEqual(rtc.pc.transceivers[0].init, { direction: 'recvonly' });
  assert.deepEqual(sent, [{ type: 'webrtc-offer', frame: 'f1', sdp: 'v=0 offer' }]);
  assert.equal(rtc.onMessage({ type: 'webrtc-answer', frame: 'f1', sdp: 'v=0 answer' }), true);
  await Promise.resolve();
  assert.deepEqual(rtc.pc.remoteDescription, { type: 'answer', sdp: 'v=0 answer' });
  rtc.pc.connect();
  assert.equal(rtc.state, 'connected');
  rtc.close();
  assert.deepEqual(fallbacks, []);
});

test('falls back once when ICE does not connect in time', async () => {
  const { rtc, fallbacks } = video({ timeoutMs: 20 });
  await rtc.start();
  await new Promise((resolve) => { setTimeout(resolve, 60); });
  assert.deepEqual(fallbacks, ['ice-timeout']);
  assert.equal(rtc.pc.closed, true);
  rtc.fallback('again');
  assert.deepEqual(fallbacks, ['ice-timeout']);
});

test('falls back when the service closes or refuses the peer connection, or it fails', async () => {
  for (const [msg, reason] of [
    [{ type: 'webrtc-closed', frame: 'f1', reason: 'stalled' }, 'stalled'],
    [{ type: 'error', frame: 'f1', code: 'capacity', message: 'at most 32' }, 'capacity'],
  ]) {
    const { rtc, fallbacks } = video({ timeoutMs: 10_000 });
    await rtc.start();
    rtc.onMessage(msg);
    assert.deepEqual(fallbacks, [reason]);
  }
  const { rtc, fallbacks } = video({ timeoutMs: 10_000 });
  await rtc.start();
  rtc.pc.connect('failed');
  assert.deepEqual(fallbacks, ['failed']);
});

test('H.264 with packetization-mode 1 is preferred, with RTX', () => {
  const t = { prefs: null, setCodecPreferences(c) { this.prefs = c; } };
  const caps = { codecs: [
    { mimeType: 'video/VP8' },
    { mimeType: 'video/H264', sdpFmtpLine: 'packetization-mode=0;profile-level-id=42e01f' },
    { mimeType: 'video/H264', sdpFmtpLine: 'packetization-mode=1;profile-level-id=42e01f' },
    { mimeType: 'video/rtx' },
  ] };
  assert.equal(preferH264(t, caps), true);
  assert.deepEqual(t.prefs.map((c) => c.mimeType), ['video/H264', 'video/rtx']);
  assert.equal(preferH264(t, { codecs: [{ mimeType: 'video/VP8' }] }), false);
});

// A <video> whose frame callbacks and readyState the test sets.
class FakeVideo extends EventTarget {
  constructor() {
    super();
    this.videoWidth = 0;
    this.readyState = 0;
    this.callbacks = [];
  }

  requestVideoFrameCallback(cb) { this.callbacks.push(cb); }

  frame() { const cbs = this.callbacks; this.callbacks = []; cbs.forEach((cb) => cb(0, {})); }

  play() { return Promise.resolve(); }
}

test('a frame is drawn only once the video holds it: a callback before that waits for loadeddata', () => {
  const draws = [];
  const canvas = { width: 1280, height: 800 };
  const ctx = { drawImage: (v) => draws.push(v) };
  let drawnTold = 0;
  const made = [];
  const rtc = new WebRtcVideo({
    frameId: 'f1', send: () => true, target: () => ({ canvas, ctx }), onFallback: () => {},
    onDrawn: () => { drawnTold += 1; }, RTCPeerConnection: FakePeerConnection,
    document: { createElement: () => { const v = new FakeVideo(); made.push(v); return v; } },
  });
  rtc.attach({});
  const [v] = made;
  v.videoWidth = 1280; // its size is known, its frame not yet (readyState 0), as Chromium did on a busy machine
  v.frame();
  assert.deepEqual([draws.length, drawnTold], [0, 0]); // nothing drawn, nothing told
  assert.equal(v.callbacks.length, 1); // still asking for frames
  v.readyState = 2;
  v.dispatchEvent(new Event('loadeddata'));
  assert.deepEqual([draws.length, drawnTold], [1, 1]);
  v.frame();
  assert.deepEqual([draws.length, drawnTold], [2, 2]);
  rtc.close();
});
