// framestream viewer library: one WebSocket to the service, any number of frames drawn into canvases.
//
//   import { connect } from '/web/framestream.js';
//   const client = connect({ token });            // ws(s)://<page host>/ws
//   client.watch('frame-id', document.querySelector('canvas'));
//   client.addEventListener('frame-state', (e) => console.log(e.detail));
//
// The wire protocol is docs/protocol.md (shared PROTOCOL.md); the API is docs/viewer.md.
// Plain ES module, no build step, no dependencies: WebCodecs VideoDecoder does the H.264.

import { parseVideoMessage, KIND_VIDEO } from './lib/header.js';
import { DecodeSync, DECODE } from './lib/sync.js';
import { Backoff } from './lib/backoff.js';
import { StatsWindow } from './lib/stats.js';
import { decodeClaims, roleOf } from './lib/token.js';

export { mountFrame } from './lib/view.js';
export { attachInput } from './lib/input.js';
export { decodeClaims, roleOf } from './lib/token.js';

const now = () => performance.now();
/** Wall clock in microseconds, the same clock as the server's capture times. */
const wallUs = () => (performance.timeOrigin + performance.now()) * 1000;

// Close codes after which reconnecting with the same token cannot help.
const AUTH_CLOSE_CODES = new Set([4401, 4403]);
// More queued chunks than this means the decoder cannot keep up: drop and wait for a keyframe.
const MAX_DECODE_QUEUE = 24;
const HELLO_TIMEOUT_MS = 10_000;

/** The default WebSocket URL: `ws` next to the page (so a page served under a path prefix, such as a
 * gateway's /sandboxes/ID/, reaches the WebSocket under the same prefix). */
export function defaultUrl(loc = globalThis.location) {
  const url = new URL('ws', loc.href ?? `${loc.protocol}//${loc.host}/`);
  url.protocol = loc.protocol === 'https:' ? 'wss:' : 'ws:';
  url.hash = '';
  url.search = '';
  return url.href;
}

/** Whether this browser can decode (WebCodecs needs a secure context: https or http://127.0.0.1/localhost). */
export function webCodecsAvailable() {
  return typeof globalThis.VideoDecoder === 'function' && typeof globalThis.EncodedVideoChunk === 'function';
}

/** Open a client. Options: see FramestreamClient. */
export function connect(options = {}) {
  const client = new FramestreamClient(options);
  client.open();
  return client;
}

/** One watched frame: its canvas, decoder, synchronisation and statistics. Internal. */
class WatchedFrame {
  constructor(client, id, canvas) {
    this.client = client;
    this.id = id;
    this.canvas = canvas;
    this.ctx = canvas ? canvas.getContext('2d', { alpha: false }) : null;
    this.slot = null;
    this.config = null; // last video-config
    this.decoder = null;
    this.decoderConfig = null;
    this.sync = new DecodeSync();
    this.stats = new StatsWindow();
    this.inflight = []; // [{captureUs, t0}] in decode order
    this.state = null; // last frame-state message
    this.control = null; // last control message
    this.dropNext = 0; // debug: binary messages to throw away, as if lost
    this.tracer = null; // debug: called for every video message and every picture drawn
    this.counts = { drawn: 0, decoded: 0, decoderErrors: 0, decoderResets: 0, keyframeRequests: 0, gaps: 0 };
    this.lastDraw = null; // {captureUs, drawnUs}
    // Pictures captured before this (wall µs) were sent from the frame's recent past when we joined: their age
    // is not transport latency, so the stats leave them out.
    this.liveFromUs = wallUs();
  }

  info() {
    return {
      frame: this.id,
      slot: this.slot,
      config: this.config,
      state: this.state,
      control: this.control,
      waitingForKeyframe: this.sync.waiting,
      decoderState: this.decoder ? this.decoder.state : null,
      ...this.counts,
      dropped: this.sync.dropped,
      lastDraw: this.lastDraw,
      stats: this.stats.snapshot(now()),
    };
  }

  /** video-config arrived: size the canvas and (re)configure the decoder when codec or size changed. */
  configure(msg) {
    this.config = msg;
    this.slot = msg.slot;
    if (this.canvas) {
      // Setting width/height clears a canvas even to the same value: only touch them on a real change, so a
      // re-watch after a reconnect keeps the last picture on screen.
      if (this.canvas.width !== msg.width) this.canvas.width = msg.width;
      if (this.canvas.height !== msg.height) this.canvas.height = msg.height;
      if (this.client.sizeCanvas) {
        this.canvas.style.width = `${msg.css_width}px`;
        this.canvas.style.aspectRatio = `${msg.css_width} / ${msg.css_height}`;
      }
    }
    const want = {
      codec: msg.codec,
      codedWidth: msg.width,
      codedHeight: msg.height,
      optimizeForLatency: true,
      // No `description`: the stream is Annex B with SPS and PPS in front of every IDR.
    };
    const same = this.decoderConfig && this.decoderConfig.codec === want.codec
      && this.decoderConfig.codedWidth === want.codedWidth && this.decoderConfig.codedHeight === want.codedHeight;
    this.decoderConfig = want;
    if (!same || !this.decoder || this.decoder.state === 'closed') this.newDecoder();
    // The server starts every watch with a keyframe; only ask again if it does not come.
    this.sync.reset(now());
  }

  newDecoder() {
    this.closeDecoder();
    this.inflight = [];
    if (!webCodecsAvailable() || !this.decoderConfig) return;
    const decoder = new VideoDecoder({
      output: (frame) => this.onOutput(frame),
      error: (err) => this.onDecoderError(decoder, err),
    });
    try {
      decoder.configure(this.decoderConfig);
    } catch (err) {
      // A bad config (e.g. a codec string this browser does not know) throws TypeError / NotSupportedError.
      this.decoder = null;
      this.client.emit('decoder-error', { frame: this.id, error: String(err), fatal: true });
      return;
    }
    this.decoder = decoder;
    this.counts.decoderResets += 1;
  }

  closeDecoder() {
    if (this.decoder && this.decoder.state !== 'closed') {
      try { this.decoder.close(); } catch { /* already closed */ }
    }
    this.decoder = null;
  }

  onDecoderError(decoder, err) {
    if (decoder !== this.decoder) return; // an old decoder we already replaced
    this.failed(err);
  }

  /** The decoder broke: drop it, ask for a keyframe and build a new decoder when it arrives. */
  failed(err) {
    this.counts.decoderErrors += 1;
    this.closeDecoder();
    this.inflight = [];
    this.client.emit('decoder-error', { frame: this.id, error: String(err && err.message ? err.message : err) });
    if (this.sync.onDecoderError(now())) this.requestKeyframe('decoder-error');
  }

  requestKeyframe(reason) {
    this.counts.keyframeRequests += 1;
    this.client.requestKeyframe(this.id, reason);
  }

  /** One binary video message for this frame. */
  onPicture(pic, byteLength) {
    const t = now();
    this.stats.received(byteLength, t);
    if (this.dropNext > 0) {
      this.dropNext -= 1;
      this.tracer?.({ sequence: pic.sequence, keyframe: pic.keyframe, action: 'lost' });
      return;
    }
    if (pic.keyframe && (!this.decoder || this.decoder.state === 'closed')) this.newDecoder();
    const decision = this.sync.onPicture(pic, t);
    this.tracer?.({ sequence: pic.sequence, keyframe: pic.keyframe, action: decision.action, gap: decision.gap,
      requestKeyframe: decision.requestKeyframe });
    if (decision.gap) this.counts.gaps += 1;
    if (decision.requestKeyframe) this.requestKeyframe(decision.gap ? 'gap' : 'waiting');
    if (decision.action !== DECODE || !this.decoder) return;
    if (this.decoder.decodeQueueSize > MAX_DECODE_QUEUE && !pic.keyframe) {
      // The decoder cannot keep up; skip to the next keyframe rather than fall ever further behind.
      this.counts.gaps += 1;
      if (this.sync.onDecoderError(t)) this.requestKeyframe('decoder-backlog');
      return;
    }
    try {
      this.inflight.push({ captureUs: pic.captureUs, t0: t });
      this.decoder.decode(new EncodedVideoChunk({
        type: pic.keyframe ? 'key' : 'delta',
        timestamp: pic.captureUs,
        data: pic.payload,
      }));
    } catch (err) {
      this.failed(err);
    }
  }

  onOutput(frame) {
    try {
      const t = now();
      let entry = this.inflight.shift();
      while (entry && entry.captureUs !== frame.timestamp && this.inflight.length) entry = this.inflight.shift();
      this.counts.decoded += 1;
      if (this.canvas && this.ctx) {
        const w = frame.displayWidth;
        const h = frame.displayHeight;
        if (this.canvas.width !== w) this.canvas.width = w;
        if (this.canvas.height !== h) this.canvas.height = h;
        this.ctx.drawImage(frame, 0, 0, w, h);
      }
      const drawnUs = wallUs();
      this.counts.drawn += 1;
      this.lastDraw = { captureUs: frame.timestamp, drawnUs };
      const latencyMs = frame.timestamp >= this.liveFromUs ? (drawnUs - frame.timestamp) / 1000 : null;
      this.stats.drawn(t, entry ? t - entry.t0 : 0, latencyMs);
      this.tracer?.({ drawn: frame.timestamp });
    } finally {
      frame.close();
    }
  }

  reset() {
    this.slot = null;
    this.inflight = [];
    this.sync.reset(now());
  }

  dispose() {
    this.closeDecoder();
  }
}

/**
 * The client. Events (CustomEvent, data in `detail`):
 *   open {welcome}; close {code, reason, reconnectInMs|null}; fatal {code, reason}
 *   frame-state, video-config, control, input-ack, error: the server's messages as they are
 *   decoder-error {frame, error}; keyframe-request {frame, reason}
 */
export class FramestreamClient extends EventTarget {
  /**
   * @param {object} o
   * @param {string} [o.url] WebSocket URL; default ws(s)://<page host>/ws
   * @param {string|(() => string|Promise<string>)} o.token a token, or a function giving a fresh one for
   *   each (re)connection
   * @param {boolean} [o.reconnect=true] reconnect with backoff after a lost connection
   * @param {Backoff|object} [o.backoff] a Backoff, or options for one
   * @param {boolean} [o.sizeCanvas=true] set the canvas's CSS width (and aspect ratio) to the frame's CSS size
   * @param {typeof WebSocket} [o.WebSocket] for tests
   */
  constructor({ url, token, reconnect = true, backoff, sizeCanvas = true, WebSocket: WS } = {}) {
    super();
    if (!token) throw new TypeError('framestream: a token is required');
    this.url = url || defaultUrl();
    this.tokenSource = token;
    this.token = typeof token === 'string' ? token : null;
    this.reconnect = reconnect;
    this.backoff = backoff instanceof Backoff ? backoff : new Backoff(backoff || {});
    this.sizeCanvas = sizeCanvas;
    this.WS = WS || globalThis.WebSocket;
    this.ws = null;
    this.state = 'idle'; // idle | connecting | open | waiting (to reconnect) | closed
    this.welcome = null;
    this.frames = new Map(); // frame id -> WatchedFrame
    this.slots = new Map(); // slot -> WatchedFrame (per connection)
    this.seq = 0;
    this.pendingInput = new Map(); // seq -> {frame, sentAt}
    this.timer = null;
    this.connections = 0;
  }

  get claims() {
    return decodeClaims(this.token);
  }

  get role() {
    return roleOf(this.token);
  }

  emit(type, detail) {
    this.dispatchEvent(new CustomEvent(type, { detail }));
  }

  /** Shorthand for addEventListener(type, e => fn(e.detail)); returns a function that removes it. */
  on(type, fn) {
    const h = (e) => fn(e.detail);
    this.addEventListener(type, h);
    return () => this.removeEventListener(type, h);
  }

  open() {
    if (this.state === 'connecting' || this.state === 'open') return;
    this.state = 'connecting';
    this._connect().catch((err) => this._lost(0, String(err)));
  }

  async _connect() {
    if (typeof this.tokenSource === 'function') this.token = await this.tokenSource();
    if (this.state !== 'connecting') return;
    const ws = new this.WS(this.url);
    ws.binaryType = 'arraybuffer';
    this.ws = ws;
    this.connections += 1;
    let helloTimer = null;
    ws.onopen = () => {
      ws.send(JSON.stringify({ type: 'hello', token: this.token }));
      helloTimer = setTimeout(() => ws.close(4408, 'no welcome'), HELLO_TIMEOUT_MS);
    };
    ws.onmessage = (ev) => {
      if (ws !== this.ws) return;
      if (typeof ev.data === 'string') {
        let msg;
        try {
          msg = JSON.parse(ev.data);
        } catch {
          return;
        }
        if (msg.type === 'welcome') clearTimeout(helloTimer);
        this._onMessage(msg);
      } else {
        this._onBinary(ev.data);
      }
    };
    ws.onclose = (ev) => {
      clearTimeout(helloTimer);
      if (ws === this.ws) this._lost(ev.code, ev.reason);
    };
    ws.onerror = () => { /* onclose follows */ };
  }

  _lost(code, reason) {
    this.ws = null;
    this.welcome = null;
    this.slots.clear();
    this.pendingInput.clear();
    for (const f of this.frames.values()) f.reset();
    if (this.state === 'closed') return;
    const authFailed = AUTH_CLOSE_CODES.has(code) && typeof this.tokenSource === 'string';
    if (!this.reconnect || authFailed) {
      this.state = 'closed';
      this.emit('close', { code, reason, reconnectInMs: null });
      if (authFailed) this.emit('fatal', { code, reason: reason || 'token refused' });
      return;
    }
    let delay = this.backoff.next();
    if (code === 4429) delay = Math.max(delay, 2000); // told to slow down
    this.state = 'waiting';
    this.emit('close', { code, reason, reconnectInMs: delay });
    this.timer = setTimeout(() => {
      this.timer = null;
      if (this.state !== 'waiting') return;
      this.state = 'idle';
      this.open();
    }, delay);
  }

  _send(msg) {
    if (!this.ws || this.ws.readyState !== 1 || !this.welcome) return false;
    this.ws.send(JSON.stringify(msg));
    return true;
  }

  _onMessage(msg) {
    const frame = msg.frame !== undefined ? this.frames.get(msg.frame) : undefined;
    switch (msg.type) {
      case 'welcome':
        this.welcome = msg;
        this.state = 'open';
        this.backoff.reset();
        this.emit('open', { welcome: msg });
        for (const f of this.frames.values()) {
          f.liveFromUs = wallUs();
          this._send({ type: 'watch', frame: f.id });
        }
        return;
      case 'video-config':
        if (!frame) return;
        if (frame.slot !== null && frame.slot !== msg.slot) this.slots.delete(frame.slot);
        frame.configure(msg);
        this.slots.set(msg.slot, frame);
        break;
      case 'frame-state':
        if (frame) frame.state = msg;
        break;
      case 'control':
        if (frame) frame.control = msg;
        break;
      case 'input-ack':
        this.pendingInput.delete(msg.seq);
        break;
      case 'error':
        if (msg.seq !== undefined) this.pendingInput.delete(msg.seq);
        break;
      default:
        break;
    }
    this.emit(msg.type, msg);
  }

  _onBinary(data) {
    let pic;
    try {
      pic = parseVideoMessage(data);
    } catch {
      return;
    }
    if (pic.kind !== KIND_VIDEO) return; // future kinds: ignore
    const frame = this.slots.get(pic.slot);
    if (frame) frame.onPicture(pic, data.byteLength);
  }

  /**
   * Watch a frame and draw it into `canvas` (which gets a 2D context: do not use it for anything else).
   * Watching again with another canvas moves the frame there. Works before the connection is open.
   */
  watch(frameId, canvas) {
    let f = this.frames.get(frameId);
    if (f && f.canvas !== canvas) {
      f.canvas = canvas;
      f.ctx = canvas ? canvas.getContext('2d', { alpha: false }) : null;
      if (f.config) f.configure(f.config);
      this.requestKeyframe(frameId, 'new-canvas');
      return f;
    }
    if (f) return f;
    f = new WatchedFrame(this, frameId, canvas);
    this.frames.set(frameId, f);
    this._send({ type: 'watch', frame: frameId });
    return f;
  }

  unwatch(frameId) {
    const f = this.frames.get(frameId);
    if (!f) return;
    this.frames.delete(frameId);
    if (f.slot !== null) this.slots.delete(f.slot);
    f.dispose();
    this._send({ type: 'unwatch', frame: frameId });
  }

  /** Ask for an IDR (the decoder lost sync). */
  requestKeyframe(frameId, reason = 'asked') {
    if (this._send({ type: 'keyframe', frame: frameId })) this.emit('keyframe-request', { frame: frameId, reason });
  }

  /**
   * Send input events (one step, applied in order) to a frame.
   * @param {string} frameId
   * @param {object|object[]} events wire events (docs/protocol.md)
   * @param {{grant?: string}} [opts] the drive grant; default the client's token
   * @returns {number|null} the seq, or null when not connected
   */
  sendInput(frameId, events, { grant } = {}) {
    const list = Array.isArray(events) ? events : [events];
    if (!list.length) return null;
    const seq = this.seq + 1;
    const msg = { type: 'input', frame: frameId, grant: grant || this.token, seq };
    if (list.length === 1) msg.event = list[0];
    else msg.events = list;
    if (!this._send(msg)) return null;
    this.seq = seq;
    this.pendingInput.set(seq, { frame: frameId, sentAt: now() });
    return seq;
  }

  /** Input messages sent and not yet acknowledged. */
  get inputInFlight() {
    return this.pendingInput.size;
  }

  /** Counters and statistics of one frame (for overlays and tests). */
  info(frameId) {
    const f = this.frames.get(frameId);
    return f ? f.info() : null;
  }

  /** Close for good. */
  close() {
    this.state = 'closed';
    clearTimeout(this.timer);
    for (const f of this.frames.values()) f.dispose();
    if (this.ws) {
      const ws = this.ws;
      this.ws = null;
      try { ws.close(1000, 'bye'); } catch { /* closing anyway */ }
    }
  }

  // --- debugging hooks (used by the browser tests) ---

  /**
   * Feed the frame's decoder something that is not H.264, so that it fails and the viewer must recover.
   * With {wipe: CSS colour} the canvas is first painted that colour, so a test can see the picture come back.
   */
  _debugCorrupt(frameId, { wipe } = {}) {
    const f = this.frames.get(frameId);
    if (!f) return false;
    if (wipe && f.ctx) {
      f.ctx.fillStyle = wipe;
      f.ctx.fillRect(0, 0, f.canvas.width, f.canvas.height);
    }
    if (!f.decoder || f.decoder.state !== 'configured') {
      f.failed(new Error('debug: no configured decoder'));
      return true;
    }
    // An IDR slice header that points at a PPS and SPS nobody sent, then noise.
    const junk = new Uint8Array(4096);
    junk.set([0, 0, 0, 1, 0x65, 0xff, 0xff, 0xff]);
    for (let i = 8; i < junk.length; i += 1) junk[i] = (i * 131 + 7) & 0xff;
    try {
      f.decoder.decode(new EncodedVideoChunk({ type: 'key', timestamp: 0, data: junk }));
      // Some decoders swallow junk silently; flush() makes the error (if any) surface now.
      f.decoder.flush().catch(() => {});
    } catch (err) {
      f.failed(err);
    }
    return true;
  }

  /** Throw away the next n video messages of a frame as if the network lost them (a sequence gap follows). */
  _debugDropNext(frameId, n = 1) {
    const f = this.frames.get(frameId);
    if (f) f.dropNext += n;
  }

  /**
   * Call `fn` for every video message of a frame, before it is decoded ({sequence, keyframe, action, gap,
   * requestKeyframe}; action 'decode', 'drop', or 'lost' for one thrown away by _debugDropNext), and for every
   * picture drawn, after drawing ({drawn: captureUs}). `null` stops it; a new watch starts without one.
   */
  _debugTrace(frameId, fn) {
    const f = this.frames.get(frameId);
    if (f) f.tracer = fn || null;
    return Boolean(f);
  }

  /** Close the socket as if the network dropped (the client reconnects). */
  _debugDropConnection() {
    if (this.ws) this.ws.close(4000, 'debug drop');
  }
}
