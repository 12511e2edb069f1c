// AgentClient: the app's server (or an agent) driving frames, with the Python client's verbs
// (framestream/client/client.py): frames over HTTP, one WebSocket for steps and for watching, each step under
// its own grant (with a key: a fresh one-step grant per step), answers matched by `seq`, refusals as typed errors.
// It decodes no video: it reads the binary messages' headers (capture time, refinement flag) to know when a
// picture came, and takes the picture itself as PNG from `GET /frames/{id}/screenshot`.
// A lost connection comes back by itself (backoff, a fresh token, the same frames watched again), as the Python
// client's does; what waited on the lost one fails with ConnectionLost.
// No dependency: Node's global WebSocket and fetch, or a `ws`-compatible constructor passed in.

import { mintToken, SandboxKey } from './tokens.js';
import * as steps from './steps.js';
import { ClientError, ConnectionLost, FATAL_CLOSE, ServiceError, errorFor } from './errors.js';
import { Backoff } from '../lib/backoff.js';
import { LivenessWatch } from '../lib/liveness.js';

const HEADER_BYTES = 16;
const KIND_VIDEO = 1;
const KIND_PATCH = 2;
const FLAG_REFINEMENT = 2;
const HELP_GRACE_S = 30; // how long past its own timeout a help request may take to be told ended
// Refusals of the connection itself (a forged or expired token): connecting again cannot help.
const REFUSED = new Set(Object.values(FATAL_CLOSE));

/** This machine's wall clock in µs since the epoch (the service's capture clock). */
export const nowUs = () => Date.now() * 1000;

async function tokenOf(source, ...args) {
  return typeof source === 'function' ? source(...args) : source;
}

/** A token's `exp` as it says (unverified: the service checks it), or null. */
export function expiresAt(token) {
  try {
    const claims = JSON.parse(Buffer.from(String(token).split('.')[0], 'base64url').toString('utf8'));
    return typeof claims.exp === 'number' ? claims.exp : null;
  } catch {
    return null;
  }
}

function claimsOf(token) {
  try {
    return JSON.parse(Buffer.from(String(token).split('.')[0], 'base64url').toString('utf8'));
  } catch {
    return null;
  }
}

/** Width and height of a PNG, from its IHDR. */
export function pngSize(png) {
  const view = new DataView(png.buffer, png.byteOffset, png.byteLength);
  if (png.byteLength < 24 || view.getUint32(0) !== 0x89504e47) throw new ClientError('not a PNG');
  return { width: view.getUint32(16), height: view.getUint32(20) };
}

function frameInfo(obj) {
  return {
    id: String(obj.id), url: String(obj.url ?? ''), state: String(obj.state ?? ''), width: Number(obj.width),
    height: Number(obj.height), dpr: Number(obj.dpr ?? 1),
    // The picture's size: the CSS size at the dpr, within 2560x1600 (a canvas sizes its backing store by it).
    encoded_width: Number(obj.encoded_width ?? Number(obj.width) * Number(obj.dpr ?? 1)),
    encoded_height: Number(obj.encoded_height ?? Number(obj.height) * Number(obj.dpr ?? 1)),
    viewers: Number(obj.viewers ?? 0), driver: obj.driver ?? null, message: obj.message ?? null,
  };
}

/** One watched frame: its config and state, and when its pictures came (headers only). */
class Watched {
  constructor(id, video) {
    this.id = id;
    this.video = video; // false: watched for its events alone (no config, no pictures; the frame may pause)
    this.config = null; // the last video-config
    this.state = null; // the last frame-state
    this.control = null; // the last control
    this.dialogs = new Map(); // the page's open dialogs (alert, confirm, prompt, beforeunload) by id
    this.pictures = 0;
    this.lastCaptureUs = 0; // capture time of the newest picture (or patch)
    this.lastChangeAt = 0; // performance.now() of the last picture that was not a refinement
  }
}

function watchMessage(f) {
  return f.video ? { type: 'watch', frame: f.id } : { type: 'watch', frame: f.id, video: false };
}

export class AgentClient {
  /**
   * Connect to the service at `url` (its HTTP base, `http://127.0.0.1:7682`) and say hello.
   * With `key` (sandboxKey(secret, id)) every token is minted when needed: drive for the connection and reads
   * (it hears file choosers, the page's cursor and downloads, told only to those who may drive, and drives
   * nothing itself), control for making frames live, and a one-step drive grant per step. Or give `token` (view/drive/control, or
   * a function returning one), `grants` (a drive token, or `frame => token`) and `control`.
   */
  static async connect(url = 'http://127.0.0.1:7682', options = {}) {
    const client = new AgentClient(url, options);
    await client._open();
    return client;
  }

  constructor(url, { key, token, grants, control, subject = 'agent', WebSocket: WS, fetch: fetchImpl,
    helloTimeoutMs = 10_000, liveness, now = () => performance.now(), reconnect = true, backoff } = {}) {
    if (key !== undefined && !(key instanceof SandboxKey)) throw new TypeError('key must be a SandboxKey');
    if (key) {
      token ??= () => mintToken(key, { role: 'drive', sub: subject });
      grants ??= (frame) => mintToken(key, { role: 'drive', frame, sub: subject, step: true });
      control ??= () => mintToken(key, { role: 'control', sub: subject });
    }
    if (!token) throw new TypeError('AgentClient needs a token (or a key)');
    this.base = String(url).replace(/\/+$/, '');
    this.wsUrl = `${this.base.replace(/^http/, 'ws')}/ws`;
    this._token = token;
    this._grants = grants ?? null;
    this._control = control ?? null;
    this._WS = WS ?? globalThis.WebSocket;
    if (typeof this._WS !== 'function') {
      throw new TypeError('no WebSocket: run Node 20 with --experimental-websocket (Node 22 has it), or pass '
        + "{WebSocket} (the `ws` package's constructor works)");
    }
    this._fetch = fetchImpl ?? globalThis.fetch;
    this._helloTimeoutMs = helloTimeoutMs;
    this._ws = null;
    this._seq = 0;
    this._pending = new Map(); // seq -> {resolve, reject, frame}
    this._watched = new Map(); // frame id -> Watched
    this._slots = new Map(); // slot -> Watched
    this._waiters = new Set(); // {check(), reject(err)}: re-checked on every message
    this._listeners = new Map(); // type -> Set(fn)
    this._refreshTimer = null;
    // A socket whose path died without a close is asked `ping` and given up when nothing answers (lib/liveness.js):
    // waiting calls then fail with ConnectionLost instead of running into their own timeouts.
    this._liveness = new LivenessWatch(liveness, { now, ping: (seq) => this._send({ type: 'ping', seq }),
      dead: () => this._dead() });
    this._closed = false;
    this._closedWith = null; // while not connected: the error the connection ended with
    this._reconnect = reconnect;
    this._backoff = new Backoff(backoff);
    this._retryTimer = null;
    this._welcomed = false; // the socket in _ws has said welcome: messages may go
    this._reconnecting = false; // lost, and coming back by itself
    this.connects = 0; // connections welcomed, the first included
    this.welcome = null;
  }

  // -- the connection ---------------------------------------------------------------------------------------------

  async _open() {
    const token = await tokenOf(this._token);
    if (this._closed) throw new ConnectionLost('the client was closed');
    const ws = new this._WS(this.wsUrl);
    ws.binaryType = 'arraybuffer';
    this._ws = ws;
    this._welcomed = false;
    await new Promise((resolve, reject) => {
      let welcomed = false;
      const failed = (error) => {
        if (this._ws === ws) this._ws = null;
        reject(error);
      };
      const timer = setTimeout(() => {
        failed(new ClientError(`no welcome from ${this.wsUrl} within ${this._helloTimeoutMs} ms`));
        try { ws.close(); } catch { /* not open */ }
      }, this._helloTimeoutMs);
      ws.addEventListener('open', () => ws.send(JSON.stringify({ type: 'hello', token })));
      ws.addEventListener('message', (event) => {
        if (!welcomed) {
          const msg = typeof event.data === 'string' ? JSON.parse(event.data) : null;
          if (msg?.type !== 'welcome') return;
          welcomed = true;
          clearTimeout(timer);
          this.welcome = msg;
          this.connects += 1;
          this._closedWith = null;
          this._welcomed = true;
          this._reconnecting = false;
          this._liveness.start();
          resolve();
          return;
        }
        if (ws !== this._ws) return; // given up for its silence
        this._liveness.heard();
        this._onData(event.data);
      });
      ws.addEventListener('close', (event) => {
        clearTimeout(timer);
        if (welcomed && ws !== this._ws) return; // given up for its silence: told already
        const code = event.code ?? 0;
        const error = errorFor(FATAL_CLOSE[code] ?? 'internal',
          `the service closed the socket (${code}${event.reason ? ` ${event.reason}` : ''})`);
        if (!welcomed) failed(error);
        else this._lost(code, event.reason ?? '', error);
      });
      ws.addEventListener('error', () => {
        // Before the welcome, an error is the attempt's end: Node's WebSocket (undici) may send no close after a
        // refused connection, which would leave the attempt to the hello timeout (10 s of a reconnect lost).
        if (welcomed) return; // (a close follows)
        clearTimeout(timer);
        failed(new ClientError(`could not connect to ${this.wsUrl}`));
        try { ws.close(); } catch { /* never opened */ }
      });
    });
    this._keepFresh(token);
  }

  /** With a minting token source, send `refresh` before the connection's token expires. */
  _keepFresh(token) {
    clearTimeout(this._refreshTimer);
    const exp = expiresAt(token);
    if (typeof this._token !== 'function' || exp === null || this._closed) return;
    const left = exp - Date.now() / 1000;
    const early = Math.min(30, Math.max(1, left / 3));
    this._refreshTimer = setTimeout(async () => {
      try {
        const fresh = await tokenOf(this._token);
        if (this._send({ type: 'refresh', token: fresh })) this._keepFresh(fresh);
      } catch (err) {
        this._emit('refresh-error', { error: err });
      }
    }, Math.max(500, (left - early) * 1000));
    this._refreshTimer.unref?.();
  }

  /** No answer to a ping: the socket is given up at once (its close handshake would never end). */
  _dead() {
    const ws = this._ws;
    if (!ws) return;
    this._lost(1006, 'no answer from the service', null);
    try { ws.close(4000, 'no answer'); } catch { /* gone anyway */ }
  }

  _send(msg) {
    if (!this.connected) return false;
    this._ws.send(JSON.stringify(msg));
    return true;
  }

  _lost(code, reason, error) {
    clearTimeout(this._refreshTimer);
    this._liveness.stop();
    this._ws = null;
    this._welcomed = false;
    const lost = this._closed ? new ConnectionLost('the client was closed') : new ConnectionLost(
      `the socket closed (${code})`);
    this._closedWith = FATAL_CLOSE[code] && error ? error : lost;
    for (const { reject } of this._pending.values()) reject(lost);
    this._pending.clear();
    for (const w of [...this._waiters]) w.reject(lost);
    // Slots are the connection's: a frame's pictures count again from its next video-config.
    this._slots.clear();
    for (const f of this._watched.values()) {
      f.config = null;
      f.dialogs.clear(); // (the service tells a joining watcher the dialogs open then)
    }
    this._reconnecting = !this._closed && this._reconnect && !FATAL_CLOSE[code];
    const reconnectInMs = this._reconnecting ? this._backoff.next() : null;
    if (this._reconnecting) this._retryLater(reconnectInMs);
    this._emit('close', { code, reason, reconnectInMs });
  }

  /** Connect again after `delayMs`, saying hello with a fresh token, and watch the same frames again. */
  _retryLater(delayMs) {
    this._retryTimer = setTimeout(async () => {
      this._retryTimer = null;
      if (this._closed) return;
      try {
        await this._open();
      } catch (err) {
        if (this._closed) return;
        if (err instanceof ServiceError && REFUSED.has(err.code)) {
          this._reconnecting = false;
          this._closedWith = err;
          this._emit('close', { code: 0, reason: err.message, reconnectInMs: null });
          return;
        }
        this._retryLater(this._backoff.next());
        return;
      }
      this._backoff.reset();
      for (const f of this._watched.values()) this._send(watchMessage(f));
      this._emit('open', { connects: this.connects });
    }, delayMs);
  }

  /** Resolves once connected (at once when it is); rejects when it will not be (closed, or its token refused), or
   * after `timeoutS`. */
  waitConnected({ timeoutS = 30 } = {}) {
    if (this.connected) return Promise.resolve();
    if (!this._reconnecting) return Promise.reject(this._closedWith ?? new ConnectionLost('not connected'));
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => end(new ClientError(`not connected within ${timeoutS} s`)), timeoutS * 1000);
      const stops = [
        this.on('open', () => end(null)),
        this.on('close', ({ reconnectInMs }) => {
          if (reconnectInMs === null) end(this._closedWith ?? new ConnectionLost('closed'));
        }),
      ];
      const end = (error) => {
        clearTimeout(timer);
        for (const stop of stops) stop();
        if (error) reject(error);
        else resolve();
      };
    });
  }

  /** Welcomed on an open socket: steps can go. */
  get connected() {
    return this._welcomed && this._ws !== null && this._ws.readyState === 1;
  }

  /** Close the socket: every waiting call fails with ConnectionLost; resolves once the socket has closed. */
  async close() {
    this._closed = true;
    clearTimeout(this._refreshTimer);
    clearTimeout(this._retryTimer);
    this._retryTimer = null;
    this._reconnecting = false;
    const ws = this._ws;
    if (!ws || ws.readyState === 3) return;
    const closed = new Promise((resolve) => ws.addEventListener('close', resolve));
    ws.close(1000, 'done');
    await closed;
  }

  // -- messages ---------------------------------------------------------------------------------------------------

  /** Call `fn` with every JSON message of `type` the service sends (`*`: all), and with `close`; returns the
   * function that stops it. */
  on(type, fn) {
    if (!this._listeners.has(type)) this._listeners.set(type, new Set());
    this._listeners.get(type).add(fn);
    return () => this._listeners.get(type)?.delete(fn);
  }

  _emit(type, detail) {
    for (const key of [type, '*']) {
      for (const fn of this._listeners.get(key) ?? []) {
        try { fn(detail); } catch { /* a listener's failure is its own */ }
      }
    }
  }

  _onData(data) {
    if (typeof data === 'string') this._onMessage(JSON.parse(data));
    else if (data instanceof ArrayBuffer) this._onBinary(new Uint8Array(data));
    else if (ArrayBuffer.isView(data)) this._onBinary(new Uint8Array(data.buffer, data.byteOffset, data.byteLength));
    else if (Array.isArray(data)) this._onBinary(new Uint8Array(Buffer.concat(data))); // ws's 'fragments'
    this._check();
  }

  _onMessage(msg) {
    if (msg.type === 'pong') return; // it did its work by arriving
    const f = typeof msg.frame === 'string' ? this._watched.get(msg.frame) : undefined;
    if (msg.type === 'input-ack' || (msg.type === 'error' && msg.seq !== undefined)) {
      const pending = this._pending.get(msg.seq);
      if (pending) {
        this._pending.delete(msg.seq);
        if (msg.type === 'input-ack') pending.resolve(msg);
        else pending.reject(errorFor(msg.code, msg.message ?? '', { frame: msg.frame ?? null, seq: msg.seq }));
      }
    } else if (f && msg.type === 'video-config') {
      if (f.config) this._slots.delete(f.config.slot);
      f.config = msg;
      this._slots.set(msg.slot, f);
    } else if (f && msg.type === 'frame-state') {
      f.state = msg;
    } else if (f && msg.type === 'control') {
      f.control = msg;
    } else if (f && msg.type === 'dialog') {
      f.dialogs.set(msg.id, msg);
    } else if (f && msg.type === 'dialog-closed') {
      f.dialogs.delete(msg.id);
    }
    this._emit(msg.type, msg);
    for (const w of [...this._waiters]) w.message?.(msg);
  }

  _onBinary(bytes) {
    if (bytes.byteLength < HEADER_BYTES) return;
    const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    const kind = view.getUint8(0);
    if (kind !== KIND_VIDEO && kind !== KIND_PATCH) return; // padding (3) and kinds to come
    const f = this._slots.get(view.getUint16(2));
    if (!f) return;
    const flags = view.getUint8(1);
    f.pictures += 1;
    f.lastCaptureUs = Number(view.getBigUint64(8));
    if (!(flags & FLAG_REFINEMENT)) f.lastChangeAt = performance.now();
  }

  /**
   * Until `check()` returns a value other than undefined (checked now, on every message and picture, and every
   * `everyMs` when given); rejects after `timeoutS`, and with ConnectionLost when the socket goes.
   */
  _until(what, check, { timeoutS = 30, everyMs, message } = {}) {
    return new Promise((resolve, reject) => {
      if (this._closedWith) {
        reject(this._closedWith);
        return;
      }
      const w = {};
      const done = () => {
        this._waiters.delete(w);
        clearTimeout(w.timer);
        clearInterval(w.tick);
      };
      w.check = () => {
        let value;
        try { value = check(); } catch (err) { done(); reject(err); return; }
        if (value !== undefined) { done(); resolve(value); }
      };
      w.reject = (err) => { done(); reject(err); };
      w.message = message;
      w.timer = setTimeout(() => w.reject(new ClientError(`${what}: not within ${timeoutS} s`)), timeoutS * 1000);
      if (everyMs) w.tick = setInterval(w.check, everyMs);
      this._waiters.add(w);
      w.check();
    });
  }

  _check() {
    for (const w of [...this._waiters]) w.check();
  }

  // -- frames (HTTP) ----------------------------------------------------------------------------------------------

  async _http(method, path, token, body) {
    const headers = { Authorization: `Bearer ${token}` };
    const form = body instanceof FormData; // (multipart: fetch writes its own Content-Type, with the boundary)
    if (body !== undefined && !form) headers['Content-Type'] = 'application/json';
    const resp = await this._fetch(this.base + path, {
      method, headers, body: body === undefined || form ? body : JSON.stringify(body),
    });
    if (resp.status >= 400) {
      let data = {};
      try { data = await resp.json(); } catch { /* not JSON */ }
      const frame = path.startsWith('/frames/') ? decodeURIComponent(path.split('/')[2].split('?')[0]) : null;
      throw errorFor(String(data.error ?? 'internal'), String(data.message ?? resp.statusText),
        { frame, status: resp.status });
    }
    return resp;
  }

  async _controlToken() {
    if (!this._control) throw errorFor('forbidden', 'this client has no control token: connect with key or control');
    return tokenOf(this._control);
  }

  /** `GET /frames`: every frame the token may see. */
  async frames() {
    const resp = await this._http('GET', '/frames', await tokenOf(this._token));
    return (await resp.json()).frames.map(frameInfo);
  }

  /** `GET /frames/{id}`. */
  async frame(frameId) {
    const resp = await this._http('GET', `/frames/${encodeURIComponent(frameId)}`, await tokenOf(this._token));
    return frameInfo(await resp.json());
  }

  /**
   * Make a frame live (`POST /frames`, control token) and, unless `watch` is false, watch it: resolves once its
   * first picture's `video-config` came (the page has loaded), with the frame as it is then.
   */
  async openFrame(url, { width = 1280, height = 800, dpr, watch = true, timeoutS = 60 } = {}) {
    const body = { url, width, height, ...(dpr === undefined ? {} : { dpr }) };
    const resp = await this._http('POST', '/frames', await this._controlToken(), body);
    const info = frameInfo(await resp.json());
    if (!watch) return info;
    await this.watch(info.id, { timeoutS });
    return this.frame(info.id);
  }

  /**
   * Give a frame a new CSS size (`PATCH /frames/{id}`, control token; `dpr` 2 unless given, as openFrame): in
   * place while the dpr stays (the page keeps its state), else its browser relaunches at the new size (the page
   * loads again). Resolves with the frame as the service answers; when this client watches it, only once the
   * `video-config` of that size came (`info(id).config`; the service answers HTTP before the socket brings it),
   * so what comes next is of the new size. Rejects when that config does not come within `timeoutS`.
   */
  async resizeFrame(frameId, { width, height, dpr, timeoutS = 30 } = {}) {
    const body = { width, height, ...(dpr === undefined ? {} : { dpr }) };
    const resp = await this._http('PATCH', `/frames/${encodeURIComponent(frameId)}`, await this._controlToken(),
      body);
    const info = frameInfo(await resp.json());
    if (this._watched.get(frameId)?.video) {
      await this._until(`video-config of ${frameId} at ${info.encoded_width}x${info.encoded_height}`, () => {
        const config = this._watched.get(frameId)?.config;
        return config && config.width === info.encoded_width && config.height === info.encoded_height
          ? config : undefined;
      }, { timeoutS });
    }
    return info;
  }

  /** `DELETE /frames/{id}` (control token); `purge` removes its profile too. */
  async deleteFrame(frameId, { purge = false } = {}) {
    this._watched.delete(frameId);
    await this._http('DELETE', `/frames/${encodeURIComponent(frameId)}${purge ? '?purge=1' : ''}`,
      await this._controlToken());
  }

  /** The frame's newest picture as PNG (lossless, at its encoded size), with its capture time. */
  async screenshot(frameId) {
    const resp = await this._http('GET', `/frames/${encodeURIComponent(frameId)}/screenshot`,
      await tokenOf(this._token));
    const png = new Uint8Array(await resp.arrayBuffer());
    const header = resp.headers.get('X-Capture-Time-Us');
    return { png, ...pngSize(png), captureUs: header && /^\d+$/.test(header) ? Number(header) : null };
  }

  // -- files (HTTP, with a grant that may drive the frame) ------------------------------------------------------

  /** What the frame's pages downloaded or printed, oldest first: `{id, name, size, state}` each. */
  async downloads(frameId, { grant } = {}) {
    const resp = await this._http('GET', `/frames/${encodeURIComponent(frameId)}/downloads`,
      await this._grant(frameId, grant));
    return (await resp.json()).downloads;
  }

  /** A finished download's bytes (ids from `downloads`). */
  async download(frameId, downloadId, { grant } = {}) {
    const path = `/frames/${encodeURIComponent(frameId)}/downloads/${encodeURIComponent(downloadId)}`;
    const resp = await this._http('GET', path, await this._grant(frameId, grant));
    return new Uint8Array(await resp.arrayBuffer());
  }

  /**
   * Answer a page's open file chooser (its id from the `file-chooser` message, told to connections that may drive
   * the frame) with these files (`File`s, or `Blob`s: `fs.openAsBlob(path)`); the names the page got them under.
   */
  async chooseFiles(frameId, chooserId, files, { grant } = {}) {
    return this._upload(`/frames/${encodeURIComponent(frameId)}/file-chooser/${encodeURIComponent(chooserId)}`,
      frameId, files, grant);
  }

  /** Drop these files on the frame's active page at (x, y) CSS pixels, as a person's drag from their desktop. */
  async dropFiles(frameId, x, y, files, { grant } = {}) {
    const where = new URLSearchParams({ x: String(x), y: String(y) });
    return this._upload(`/frames/${encodeURIComponent(frameId)}/drop?${where}`, frameId, files, grant);
  }

  async _upload(path, frameId, files, grant) {
    const form = new FormData();
    files.forEach((file, i) => form.append('file', file, file.name || `file${i + 1}`));
    const resp = await this._http('POST', path, await this._grant(frameId, grant), form);
    return (await resp.json()).files;
  }

  // -- watching ---------------------------------------------------------------------------------------------------

  /**
   * Watch `frameId` (resuming or reopening it); resolves with its `video-config` once its pictures start. With
   * `video: false`, for what happens to it alone (state, who drives, dialogs, requests for help): nothing is
   * encoded for this client and the frame pauses as one nobody views; resolves with its `frame-state`. Watching
   * it again the other way turns its pictures on or off.
   */
  async watch(frameId, { timeoutS = 60, video = true } = {}) {
    let f = this._watched.get(frameId);
    const answer = () => (f.video ? f.config : f.state) ?? undefined;
    if (f && f.video === video && answer() !== undefined) return answer();
    if (!f || f.video !== video) {
      const known = f !== undefined;
      if (f?.config) this._slots.delete(f.config.slot);
      f = f ?? new Watched(frameId, video);
      Object.assign(f, { video, config: null, state: null });
      this._watched.set(frameId, f);
      if (!this._send(watchMessage(f))) {
        if (!known) this._watched.delete(frameId); // (one watched before is watched again once connected)
        throw this._closedWith ?? new ConnectionLost('not connected');
      }
    }
    let refused = null;
    return this._until(`${video ? 'video-config' : 'frame-state'} of ${frameId}`, () => {
      if (refused) throw refused;
      return answer();
    }, {
      timeoutS,
      message: (msg) => {
        if (msg.type === 'error' && msg.frame === frameId && msg.seq === undefined) {
          this._watched.delete(frameId);
          refused = errorFor(msg.code, msg.message ?? '', { frame: frameId });
        }
      },
    });
  }

  unwatch(frameId) {
    const f = this._watched.get(frameId);
    if (!f) return;
    this._watched.delete(frameId);
    if (f.config) this._slots.delete(f.config.slot);
    this._send({ type: 'unwatch', frame: frameId });
  }

  /** What this client knows of a watched frame: `config`, `state`, `control`, pictures and the newest capture. */
  info(frameId) {
    const f = this._watched.get(frameId);
    return f ? {
      config: f.config, state: f.state, control: f.control, pictures: f.pictures, lastCaptureUs: f.lastCaptureUs,
      dialogs: [...f.dialogs.values()],
    } : null;
  }

  /**
   * A PNG of the frame captured at or after `afterUs` (µs since the epoch; a step's `sentUs`): waits until a
   * picture captured then has come over the socket, then takes the screenshot (the service's newest picture).
   */
  async pictureAfter(frameId, afterUs, { timeoutS = 10 } = {}) {
    const deadline = performance.now() + timeoutS * 1000;
    await this.watch(frameId, { timeoutS });
    const f = this._watched.get(frameId);
    for (;;) {
      const left = (deadline - performance.now()) / 1000;
      await this._until(`a picture of ${frameId} after ${afterUs}`,
        () => (f.lastCaptureUs >= afterUs ? true : undefined), { timeoutS: Math.max(0.001, left) });
      const shot = await this.screenshot(frameId);
      if (shot.captureUs === null || shot.captureUs >= afterUs) return shot;
      afterUs = shot.captureUs + 1; // (not expected: the screenshot is the newest picture)
    }
  }

  /**
   * Wait until the page has not changed for `quietS` seconds (no picture but refinements), counted from the call
   * at the earliest; the newest picture then, as PNG.
   */
  async settle(frameId, { quietS = 0.3, timeoutS = 10 } = {}) {
    const start = performance.now();
    await this.watch(frameId, { timeoutS });
    const f = this._watched.get(frameId);
    const quietMs = quietS * 1000;
    await this._until(`${frameId} still for ${quietS} s`, () => {
      const since = performance.now() - Math.max(start, f.lastChangeAt);
      return since >= quietMs && f.pictures > 0 ? true : undefined;
    }, { timeoutS: Math.max(0.001, timeoutS - (performance.now() - start) / 1000), everyMs: 25 });
    return this.screenshot(frameId);
  }

  // -- steps ------------------------------------------------------------------------------------------------------

  async _grant(frameId, grant) {
    if (grant) return grant;
    if (!this._grants) throw new ClientError('this client has no grants: connect with grants or key');
    return tokenOf(this._grants, frameId);
  }

  /**
   * One driver step (`input`, `navigate`, `page`, `dialog-answer`, `release`, `request-help`) under `grant`
   * (default: a fresh grant from the client's source), answered `input-ack` or a typed error.
   */
  async step(frameId, type, fields, { grant, timeoutS = 30 } = {}) {
    const token = await this._grant(frameId, grant);
    const seq = ++this._seq;
    const sentUs = nowUs();
    const acked = new Promise((resolve, reject) => {
      this._pending.set(seq, { resolve, reject, frame: frameId });
    });
    if (!this._send({ type, frame: frameId, grant: token, seq, ...fields })) {
      this._pending.delete(seq);
      throw this._closedWith ?? new ConnectionLost('not connected');
    }
    let timer;
    const timeout = new Promise((_, reject) => {
      timer = setTimeout(() => {
        this._pending.delete(seq);
        reject(new ClientError(`no answer to ${type} ${seq} on ${frameId} within ${timeoutS} s`));
      }, timeoutS * 1000);
    });
    try {
      await Promise.race([acked, timeout]);
    } finally {
      clearTimeout(timer);
    }
    return { frame: frameId, seq, sentUs, ackedUs: nowUs() };
  }

  /** Apply wire events (docs/protocol.md, "Input events") as one step; resolves once acknowledged. */
  async send(frameId, events, options = {}) {
    const list = Array.isArray(events) ? events : [events];
    if (list.length < 1 || list.length > 256) throw new RangeError('a step has 1 to 256 events');
    return this.step(frameId, 'input', list.length === 1 ? { event: list[0] } : { events: list }, options);
  }

  click(frameId, x, y, { button, modifiers, count, grant } = {}) {
    return this.send(frameId, steps.click(x, y, { button, modifiers, count }), { grant });
  }

  doubleClick(frameId, x, y, { button, modifiers, grant } = {}) {
    return this.send(frameId, steps.click(x, y, { button, modifiers, count: 2 }), { grant });
  }

  move(frameId, x, y, { grant } = {}) {
    return this.send(frameId, steps.move(x, y), { grant });
  }

  drag(frameId, x0, y0, x1, y1, { moves, button, grant } = {}) {
    return this.send(frameId, steps.drag(x0, y0, x1, y1, { moves, button }), { grant });
  }

  scroll(frameId, x, y, { dx, dy, modifiers, grant } = {}) {
    return this.send(frameId, steps.scroll(x, y, { dx, dy, modifiers }), { grant });
  }

  /** Typed text (as IME text). */
  type(frameId, text, { grant } = {}) {
    return this.send(frameId, steps.text(text), { grant });
  }

  /** A key or chord: "Enter", "Control+A", "Shift+Tab". */
  press(frameId, keys, { grant } = {}) {
    return this.send(frameId, steps.chord(keys), { grant });
  }

  /** Load `url` in the active page, or go `back`, `forward`, `reload`; resolves once committed. */
  navigate(frameId, target, { grant, timeoutS = 40 } = {}) {
    const fields = ['back', 'forward', 'reload'].includes(target) ? { action: target } : { url: target };
    return this.step(frameId, 'navigate', fields, { grant, timeoutS });
  }

  /** Activate, close or reload one of the frame's pages (ids from `info(id).state.pages`); resolves once done. */
  page(frameId, action, pageId, { grant } = {}) {
    return this.step(frameId, 'page', { action, page: pageId }, { grant });
  }

  /** OK (`accept`) or Cancel a page's open dialog (ids from `info(id).dialogs` or the `dialog` message); `text`
   * answers a prompt. */
  answerDialog(frameId, dialogId, accept, { text, grant } = {}) {
    return this.step(frameId, 'dialog-answer', { id: dialogId, accept, ...(text === undefined ? {} : { text }) },
      { grant });
  }

  // -- handoff (issue 27) -----------------------------------------------------------------------------------------

  /**
   * Ask a person to take the frame over (a login, a CAPTCHA): `request-help` under a fresh one-step grant, then
   * wait for its `help-ended`. Resolves to the person's note (`''` when they left none) once they answered, or
   * null when nobody did before `timeoutS`; ClientError when it was cancelled (a newer request, the frame deleted).
   */
  async requestHelp(frameId, reason, { timeoutS = 300, grant } = {}) {
    // help-requested and help-ended go to the frame's watchers. Waiting for a person takes no pictures: the frame
    // pauses while nobody views it, as it would without us.
    if (!this._watched.has(frameId)) await this.watch(frameId, { video: false });
    const token = await this._grant(frameId, grant);
    const sub = claimsOf(token)?.sub;
    let id = null;
    let ended = null;
    let refused = null;
    // Listening from before the request goes, so that no answer can come before we listen.
    const outcome = this._until(`help-ended on ${frameId}`, () => {
      if (refused) throw refused;
      return ended ?? undefined;
    }, {
      timeoutS: timeoutS + HELP_GRACE_S,
      message: (msg) => {
        if (msg.frame !== frameId) return;
        if (msg.type === 'help-requested' && id === null && (sub === undefined || msg.subject === sub)) id = msg.id;
        if (msg.type === 'help-ended' && (id === null || msg.id === id)) ended = msg;
      },
    });
    try {
      await this.step(frameId, 'request-help', { reason, timeout_s: timeoutS }, { grant: token });
    } catch (err) {
      refused = err;
      this._check();
      await outcome.catch(() => {});
      throw err;
    }
    const msg = await outcome;
    if (msg.outcome === 'cancelled') throw new ClientError(`the request for help on ${frameId} was cancelled`);
    return msg.outcome === 'answered' ? String(msg.note ?? '') : null;
  }

  /** Hand the frame back (`release`, under a fresh one-step grant), with a note for whoever drives next. */
  release(frameId, note, { grant } = {}) {
    return this.step(frameId, 'release', note === undefined || note === null ? {} : { note }, { grant });
  }
}

