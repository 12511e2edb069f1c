// The client's connection to the service: one WebSocket, `hello` first, `welcome` expected within
// HELLO_TIMEOUT_MS, and reconnecting with backoff after a loss (but never after a refused fixed token). The service
// closes a connection once its token expired (4401): with a token function, a fresh token goes as `refresh` a
// third of its lifetime (at most 30 s) before it expires. A connection that stays silent is asked `ping`, and
// given up when nothing answers (lib/liveness.js): a path that died without a close shows as `Reconnecting…`
// instead of a still canvas. It knows nothing of frames: messages and losses go to the callbacks the client gives
// it.

import { Backoff } from './backoff.js';
import { monotonicMs } from './clock.js';
import { LivenessWatch } from './liveness.js';

// Close codes after which reconnecting with the same token cannot help.
export const AUTH_CLOSE_CODES = new Set([4401, 4403]);
export const HELLO_TIMEOUT_MS = 10_000;
// 4429 (too many connections or messages): wait at least this long before coming back.
const SLOW_DOWN_CODE = 4429;
const SLOW_DOWN_MS = 2000;
// What a connection given up for its silence is reported as: the code browsers give a connection that dropped.
export const NO_ANSWER_CODE = 1006;
export const NO_ANSWER_REASON = 'no answer from the service';

/** The default WebSocket URL: `ws` next to the page (so a page served under a path prefix, such as a
 * gateway's /sandboxes/ID/, reaches the WebSocket under the same prefix). */
export function defaultUrl(loc = globalThis.location) {
  const url = new URL('ws', loc.href ?? `${loc.protocol}//${loc.host}/`);
  url.protocol = loc.protocol === 'https:' ? 'wss:' : 'ws:';
  url.hash = '';
  url.search = '';
  return url.href;
}

/** A token's `exp` in ms since the epoch, as the token says (the service verifies it), or null. */
export function tokenExpiryMs(token) {
  try {
    const part = String(token).split('.')[0].replace(/-/g, '+').replace(/_/g, '/');
    const claims = JSON.parse(atob(part + '='.repeat((4 - (part.length % 4)) % 4)));
    return typeof claims.exp === 'number' ? claims.exp * 1000 : null;
  } catch {
    return null;
  }
}

export class Transport {
  /**
   * @param {object} o
   * @param {string} o.url WebSocket URL
   * @param {string|(() => string|Promise<string>)} o.token a token, or a function giving one per connection
   * @param {boolean} [o.reconnect=true] reconnect with backoff after a lost connection
   * @param {Backoff|object} [o.backoff] a Backoff, or options for one
   * @param {typeof WebSocket} [o.WebSocket] for tests
   * @param {number} [o.helloTimeoutMs] how long to wait for `welcome` before closing with 4408
   * @param {string[]} [o.features] asked for in `hello` (none: the field is left out)
   * @param {{idleMs?: number, quietMs?: number, answerMs?: number}} [o.liveness] when to send `ping`, when its
   *   late answer is said (`quiet`) and when the connection is given up (lib/liveness.js)
   * @param {() => number} [o.now] monotonic milliseconds, for tests
   * @param {(welcome: object) => void} o.onWelcome the connection is open (after its state is updated)
   * @param {(msg: object) => void} o.onMessage every other JSON message
   * @param {(data: ArrayBuffer) => void} o.onBinary every binary message
   * @param {() => void} o.onDown the connection is gone: whatever belonged to it is void (called before `close`)
   * @param {(type: 'close'|'fatal'|'quiet', detail: object) => void} o.emit the client's events about the
   *   connection (`quiet`: `{quiet}`, true when a ping's answer is late, false when a message came after all)
   */
  constructor({ url, token, reconnect = true, backoff, WebSocket: WS, helloTimeoutMs = HELLO_TIMEOUT_MS,
    features = [], liveness, now = monotonicMs, onWelcome, onMessage, onBinary, onDown, emit }) {
    this.url = url;
    this.tokenSource = token;
    this.token = typeof token === 'string' ? token : null;
    this.reconnect = reconnect;
    this.backoff = backoff instanceof Backoff ? backoff : new Backoff(backoff || {});
    this.WS = WS || globalThis.WebSocket;
    this.helloTimeoutMs = helloTimeoutMs;
    this.features = features;
    Object.assign(this, { onWelcome, onMessage, onBinary, onDown, emit });
    this.ws = null;
    this.state = 'idle'; // idle | connecting | open | waiting (to reconnect) | closed
    this.welcome = null;
    this.timer = null; // the reconnect timer
    this.refreshTimer = null; // sends `refresh` before the token expires (token functions only)
    this.liveness = new LivenessWatch(liveness, { now, ping: (seq) => this.send({ type: 'ping', seq }),
      quiet: (quiet) => this.emit('quiet', { quiet }), dead: () => this._dead() });
    this.connections = 0;
  }

  open() {
    if (this.state === 'connecting' || this.state === 'open') return;
    this.state = 'connecting';
    this._connect().catch((err) => this._lost(0, String(err)));
  }

  async _connect() {
    if (typeof this.tokenSource === 'function') this.token = await this.tokenSource();
    if (this.state !== 'connecting') return; // closed while the token was on its way
    const ws = new this.WS(this.url);
    ws.binaryType = 'arraybuffer';
    this.ws = ws;
    this.connections += 1;
    let helloTimer = null;
    ws.onopen = () => {
      const hello = { type: 'hello', token: this.token };
      if (this.features.length) hello.features = this.features;
      ws.send(JSON.stringify(hello));
      helloTimer = setTimeout(() => ws.close(4408, 'no welcome'), this.helloTimeoutMs);
    };
    ws.onmessage = (ev) => {
      if (ws !== this.ws) return; // a socket we already gave up
      this.liveness.heard();
      if (typeof ev.data !== 'string') {
        this.onBinary(ev.data);
        return;
      }
      let msg;
      try {
        msg = JSON.parse(ev.data);
      } catch {
        return;
      }
      if (msg.type === 'welcome') {
        clearTimeout(helloTimer);
        this._welcomed(msg);
      } else if (msg.type !== 'pong') { // a pong has done its work by arriving
        this.onMessage(msg);
      }
    };
    ws.onclose = (ev) => {
      clearTimeout(helloTimer);
      if (ws === this.ws) this._lost(ev.code, ev.reason);
    };
    ws.onerror = () => { /* onclose follows */ };
  }

  _welcomed(msg) {
    this.welcome = msg;
    this.state = 'open';
    this.backoff.reset();
    this._scheduleRefresh();
    this.liveness.start();
    this.onWelcome(msg);
  }

  /** No answer to a ping: closing a socket whose path died waits for a close handshake that never comes, so it
   * is given up at once. */
  _dead() {
    const ws = this.ws;
    if (!ws) return;
    ws.onmessage = null;
    ws.onclose = null;
    try { ws.close(4000, 'no answer'); } catch { /* gone anyway */ }
    this._lost(NO_ANSWER_CODE, NO_ANSWER_REASON);
  }

  _scheduleRefresh() {
    clearTimeout(this.refreshTimer);
    this.refreshTimer = null;
    if (typeof this.tokenSource !== 'function') return; // a fixed token ends with its connection
    const exp = tokenExpiryMs(this.token);
    if (exp === null) return;
    const left = exp - Date.now();
    const lead = Math.min(30_000, Math.max(1000, left / 3));
    this.refreshTimer = setTimeout(() => this._refresh(), Math.max(500, left - lead));
  }

  async _refresh() {
    this.refreshTimer = null;
    const ws = this.ws;
    let token;
    try {
      token = await this.tokenSource();
    } catch {
      return; // then the service closes at exp, and the reconnect asks the function again
    }
    if (ws !== this.ws || this.state !== 'open') return;
    this.token = token;
    this.send({ type: 'refresh', token });
    this._scheduleRefresh();
  }

  /**
   * A token minted now, for a step that must carry a grant newer than whoever drives (take-over: an agent mints a
   * grant per step, so the connection's token is older than its last one). With a token function, a fresh token
   * that also becomes the connection's (sent as `refresh`, so later steps carry it); with a fixed token, that token.
   */
  async renewToken() {
    if (typeof this.tokenSource !== 'function') return this.token;
    const ws = this.ws;
    const token = await this.tokenSource();
    if (ws === this.ws && this.state === 'open' && token && token !== this.token) {
      this.token = token;
      this.send({ type: 'refresh', token });
      this._scheduleRefresh();
    }
    return token;
  }

  _lost(code, reason) {
    clearTimeout(this.refreshTimer);
    this.refreshTimer = null;
    this.liveness.stop();
    this.ws = null;
    this.welcome = null;
    this.onDown();
    if (this.state === 'closed') return;
    const authFailed = AUTH_CLOSE_CODES.has(code) && typeof this.tokenSource === 'string';
    if (!this.reconnect || authFailed) {
      this.state = 'closed';
      this.emit('close', { code, reason, reconnectInMs: null });
      if (authFailed) this.emit('fatal', { code, reason: reason || 'token refused' });
      return;
    }
    let delay = this.backoff.next();
    if (code === SLOW_DOWN_CODE) delay = Math.max(delay, SLOW_DOWN_MS);
    this.state = 'waiting';
    this.emit('close', { code, reason, reconnectInMs: delay });
    this.timer = setTimeout(() => {
      this.timer = null;
      if (this.state !== 'waiting') return;
      this.state = 'idle';
      this.open();
    }, delay);
  }

  /** Send a JSON message; false (and nothing sent) unless the connection is open and welcomed. */
  send(msg) {
    if (!this.ws || this.ws.readyState !== 1 || !this.welcome) return false;
    this.ws.send(JSON.stringify(msg));
    return true;
  }

  /** Close for good (no close event, no reconnect). */
  close() {
    this.state = 'closed';
    clearTimeout(this.timer);
    clearTimeout(this.refreshTimer);
    this.liveness.stop();
    if (this.ws) {
      const ws = this.ws;
      this.ws = null;
      try { ws.close(1000, 'bye'); } catch { /* closing anyway */ }
    }
  }
}
