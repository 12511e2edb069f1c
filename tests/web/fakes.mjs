// Stand-ins for the browser's WebSocket, WebCodecs and canvas, shared by the client's node tests. Each keeps
// what it was given so a test can check it; `sockets` and `decoders` list every instance made.

import { encodeVideoMessage } from '../../web/lib/header.js';

export const sockets = [];
export const decoders = [];

/** A WebSocket that opens on the next microtask, records what is sent and closes asynchronously. */
export class FakeSocket {
  constructor(url) {
    this.url = url;
    this.sent = [];
    this.readyState = 0;
    sockets.push(this);
    queueMicrotask(() => { this.readyState = 1; this.onopen?.(); });
  }
  send(data) { this.sent.push(JSON.parse(data)); }
  close(code = 1000, reason = '') {
    if (this.readyState === 3) return;
    this.readyState = 3;
    this.closedWith = { code, reason };
    queueMicrotask(() => this.onclose?.({ code, reason }));
  }
  // test side
  receive(msg) {
    const raw = typeof msg === 'string' || msg instanceof ArrayBuffer;
    this.onmessage?.({ data: raw ? msg : JSON.stringify(msg) });
  }
  binary(fields) { this.onmessage?.({ data: encodeVideoMessage(fields).buffer }); }
  types() { return this.sent.map((m) => m.type); }
}

/** A VideoDecoder that keeps its chunks; a chunk starting with 0xee breaks it (error callback, state closed). */
export class FakeDecoder {
  constructor({ output, error }) {
    Object.assign(this, { output, error, state: 'unconfigured', chunks: [], decodeQueueSize: 0, flushes: 0 });
    decoders.push(this);
  }
  configure(config) {
    if (config.codec === 'bogus') throw new TypeError('unsupported codec');
    this.config = config;
    this.state = 'configured';
  }
  decode(chunk) {
    if (this.state !== 'configured') throw new Error('InvalidStateError');
    this.chunks.push(chunk);
    if (chunk.data[0] === 0xee) {
      this.state = 'closed';
      queueMicrotask(() => this.error(new Error('Decoding error.')));
    }
  }
  flush() { this.flushes += 1; return Promise.resolve(); }
  close() { this.state = 'closed'; }
  // test side: hand out a decoded picture
  emit({ timestamp, width = 640, height = 400 }) {
    const frame = { timestamp, displayWidth: width, displayHeight: height, closed: false,
      close() { this.closed = true; } };
    this.output(frame);
    return frame;
  }
}

export class FakeChunk {
  constructor({ type, timestamp, data }) { Object.assign(this, { type, timestamp, data: new Uint8Array(data) }); }
}

/** A canvas whose 2D context records its calls and which counts the times its size is set (that clears it). */
export class FakeCanvas {
  constructor(width = 2, height = 2) {
    this._w = width;
    this._h = height;
    this.sizeSets = 0;
    this.style = {};
    this.calls = [];
    const calls = this.calls;
    this.context = {
      fillStyle: null,
      drawImage: (...args) => calls.push(['drawImage', ...args]),
      fillRect(...args) { calls.push(['fillRect', this.fillStyle, ...args]); },
    };
  }
  get width() { return this._w; }
  set width(v) { this._w = v; this.sizeSets += 1; }
  get height() { return this._h; }
  set height(v) { this._h = v; this.sizeSets += 1; }
  getContext(kind, opts) { this.contextArgs = [kind, opts]; return this.context; }
}

/** Install the WebCodecs stand-ins as globals (before the viewer's modules decode anything). */
export function installWebCodecs() {
  globalThis.VideoDecoder = FakeDecoder;
  globalThis.EncodedVideoChunk = FakeChunk;
}

export const tick = () => new Promise((r) => setTimeout(r, 0));
export const b64url = (s) => Buffer.from(s).toString('base64url');

/** Wait until `predicate()` is true (checked every few ms), or fail after `withinMs`. */
export async function until(predicate, withinMs = 2000) {
  const end = Date.now() + withinMs;
  while (!predicate()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${predicate}`);
    await new Promise((r) => setTimeout(r, 2));
  }
}

/** A FramestreamClient (the class, imported after installWebCodecs()) over a FakeSocket that reconnects within
 * 5-20 ms, with `opts` beside; pushed onto `made` for the test's afterEach to close. */
export function fakeClient(FramestreamClient, token, made, opts = {}) {
  const c = new FramestreamClient({ url: 'ws://x/ws', token, WebSocket: FakeSocket, sizeCanvas: false,
    backoff: { baseMs: 5, maxMs: 20, jitter: 0 }, ...opts });
  made.push(c);
  return c;
}

/** fakeClient watching `frames`, open and welcomed. */
export async function welcomedClient(FramestreamClient, token, frames, made) {
  const c = fakeClient(FramestreamClient, token, made);
  for (const frame of frames) c.watch(frame, null);
  c.open();
  await until(() => sockets.length === 1 && sockets[0].sent.length === 1);
  const ws = sockets[0];
  ws.receive({ type: 'welcome', protocol: 1, sandbox: 'local', shared_frames: true });
  return { c, ws };
}
