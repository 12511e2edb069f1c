// The client: one connection (transport.js) carrying any number of watched frames. router.js hands each of the
// service's messages to its frame, decoder.js draws each frame's pictures; here are the public methods, the
// events, and input steps with their acknowledgements.

import { Transport, defaultUrl } from './transport.js';
import { Router, WatchedFrame } from './router.js';
import { FrameDecoder } from './decoder.js';
import { WebRtcVideo, webRtcAvailable } from './webrtc.js';
import { FEATURE_COPIES, FEATURE_PATCHES } from './patches.js';
import { debugHooks } from './debug.js';
import { decodeClaims, roleOf } from './token.js';
import { monotonicMs as now } from './clock.js';

/**
 * The client. Events (CustomEvent, data in `detail`):
 *   open {welcome}; close {code, reason, reconnectInMs|null}; fatal {code, reason}
 *   frame-state, video-config, control, input-ack, error, and the tab's dialog, dialog-closed, file-chooser,
 *   file-chooser-closed, download, clipboard, help-requested, help-ended, agent-pointer, cursor: the server's
 *   messages as they are (a `cursor` only with one of lib/pagecursor.js's keywords)
 *   decoder-error {frame, error}; keyframe-request {frame, reason}; patches-off {error} (video only from now)
 *   webrtc-fallback {frame, reason}: a frame asked over WebRTC goes over the WebSocket instead
 */
export class FramestreamClient extends EventTarget {
  /**
   * @param {object} o
   * @param {string} [o.url] WebSocket URL; default ws(s)://<page host>/ws
   * @param {string|(() => string|Promise<string>)} o.token a token, or a function giving a fresh one for
   *   each (re)connection
   * @param {boolean} [o.reconnect=true] reconnect with backoff after a lost connection
   * @param {import('./backoff.js').Backoff|object} [o.backoff] a Backoff, or options for one
   * @param {boolean} [o.sizeCanvas=true] set the canvas's CSS width (and aspect ratio) to the frame's CSS size
   * @param {boolean} [o.patches=true] take small changes as lossless patches beside the video, and scrolls as
   *   copies of what the canvas shows (hello `features`); turned off for the next connections if a patch fails
   *   to decode
   * @param {'websocket'|'webrtc'} [o.transport='websocket'] how pictures come: over the WebSocket, or over a
   *   WebRTC peer connection per frame (lib/webrtc.js; back to the WebSocket when ICE does not connect)
   * @param {number} [o.webrtcTimeoutMs] how long ICE may take to connect before falling back
   * @param {RTCIceServer[]} [o.iceServers] STUN/TURN servers for WebRTC (none: host candidates only)
   * @param {boolean} [o.pauseWhenHidden=true] while the page is hidden (a background tab, a minimised window),
   *   watch every frame without its pictures (setHidden)
   * @param {{idleMs?: number, quietMs?: number, answerMs?: number}} [o.liveness] a silent connection is asked
   *   `ping` after idleMs (5 s), said `quiet` when nothing has come quietMs (2 s) after it, and given up, then
   *   reconnected, after answerMs (10 s) (lib/liveness.js)
   * @param {typeof WebSocket} [o.WebSocket] for tests
   */
  constructor({ url, token, reconnect = true, backoff, sizeCanvas = true, patches = true, transport = 'websocket',
    webrtcTimeoutMs, iceServers = [], liveness, pauseWhenHidden = true, WebSocket } = {}) {
    super();
    this.hidden = false; // every frame watched without its pictures (setHidden)
    this.videoTransport = transport === 'webrtc' && webRtcAvailable() ? 'webrtc' : 'websocket';
    this.webrtcTimeoutMs = webrtcTimeoutMs;
    this.iceServers = iceServers;
    this.rtc = new Map(); // frame id -> WebRtcVideo of the open connection
    if (!token) throw new TypeError('framestream: a token is required');
    this.sizeCanvas = sizeCanvas;
    this.router = new Router();
    this.seq = 0; // the last input step's seq
    this.pendingInput = new Map(); // seq -> {frame, sentAt}
    this.transport = new Transport({
      url: url || defaultUrl(), token, reconnect, backoff, liveness, WebSocket,
      features: patches ? [FEATURE_PATCHES, FEATURE_COPIES] : [],
      onWelcome: (welcome) => this._welcomed(welcome),
      onMessage: (msg) => this._onMessage(msg),
      onBinary: (data) => this.router.routeBinary(data),
      onDown: () => {
        this.pendingInput.clear();
        for (const rtc of this.rtc.values()) rtc.close(); // peer connections belong to the connection
        this.rtc.clear();
        this.router.disconnected();
      },
      emit: (type, detail) => this.emit(type, detail),
    });
    const doc = globalThis.document;
    if (pauseWhenHidden && doc?.addEventListener) {
      this.hidden = doc.visibilityState === 'hidden';
      this._followVisibility = () => this.setHidden(doc.visibilityState === 'hidden');
      doc.addEventListener('visibilitychange', this._followVisibility);
    }
  }

  /**
   * Watch every frame without its pictures while `hidden` (nobody sees them: the service encodes nothing for this
   * viewer, a frame nobody else views pauses, and nothing is decoded here), and with them again when not: each
   * frame then comes back at a keyframe of its page as it is, its canvas `stale` until then. The client calls
   * this on the page's visibilitychange unless `pauseWhenHidden` is false; an embedder may call it too (a view
   * scrolled out of sight). Events, requests for help and input still go both ways while hidden.
   */
  setHidden(hidden) {
    const hide = Boolean(hidden);
    if (hide === this.hidden) return;
    const before = [...this.router.frames.values()].map((f) => [f, this._unseen(f)]);
    this.hidden = hide;
    for (const [f, was] of before) this._seenChanged(f, was);
    this.emit('hidden', { hidden: hide });
  }

  /**
   * Watch one frame without its pictures while `offscreen` (its view scrolled or panned out of sight: mountFrame
   * follows its view so), with them again when not, as setHidden does for every frame.
   */
  setOffscreen(frameId, offscreen) {
    const f = this.router.get(frameId);
    if (!f || f.offscreen === Boolean(offscreen)) return;
    const was = this._unseen(f);
    f.offscreen = Boolean(offscreen);
    this._seenChanged(f, was);
  }

  /** Whether nobody sees `f`: the page is hidden or its view is out of sight. */
  _unseen(f) {
    return this.hidden || f.offscreen;
  }

  /** `f` was unseen (`was`) before a change: its pictures off or on when that changed. */
  _seenChanged(f, was) {
    const unseen = this._unseen(f);
    if (unseen === was) return;
    if (unseen) {
      this.rtc.get(f.id)?.close();
      this.rtc.delete(f.id);
      f.video.hide();
    } else {
      f.video.show();
    }
    this._startVideo(f);
  }

  /** idle | connecting | open | waiting (to reconnect) | closed */
  get state() { return this.transport.state; }

  /** The `welcome` of the open connection, or null. */
  get welcome() { return this.transport.welcome; }

  /** Connections made so far (1 + reconnects). */
  get connections() { return this.transport.connections; }

  get url() { return this.transport.url; }

  /** The token of the current connection (null before a token function has given one). */
  get token() { return this.transport.token; }

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
    this.transport.open();
  }

  _welcomed(welcome) {
    this.emit('open', { welcome });
    // Slots were per connection: watch every frame again (the service answers with video-config).
    for (const f of this.router.frames.values()) {
      f.video.markLive();
      this._startVideo(f);
    }
  }

  _onMessage(msg) {
    if (msg.frame !== undefined && this.rtc.get(msg.frame)?.onMessage(msg)) return;
    if (msg.type === 'input-ack' || (msg.type === 'error' && msg.seq !== undefined)) {
      this.pendingInput.delete(msg.seq);
    }
    if (this.router.route(msg)) this.emit(msg.type, msg);
  }

  /**
   * Watch a frame and draw it into `canvas` (which gets a 2D context: do not use it for anything else).
   * Watching again with another canvas moves the frame there. Works before the connection is open. `offscreen`:
   * its view starts out of sight (setOffscreen), for a first watch.
   */
  watch(frameId, canvas, { offscreen = false } = {}) {
    let f = this.router.get(frameId);
    if (f && f.video.canvas !== canvas) {
      f.video.setCanvas(canvas);
      this.requestKeyframe(frameId, 'new-canvas');
      return f;
    }
    if (f) return f;
    f = new WatchedFrame(frameId, new FrameDecoder(canvas, {
      sizeCanvas: this.sizeCanvas,
      onKeyframeNeeded: (reason) => this.requestKeyframe(frameId, reason),
      onError: (detail) => this.emit('decoder-error', { frame: frameId, ...detail }),
      onPatchFailure: (error) => this._videoOnly(error),
      onStale: (stale) => this.emit('stale', { frame: frameId, stale }),
    }));
    f.offscreen = Boolean(offscreen);
    this.router.add(f);
    this._startVideo(f);
    return f;
  }

  /** Watch `f` over the chosen transport (once the connection is open; welcome starts the others). */
  _startVideo(f) {
    if (this._unseen(f)) {
      this.transport.send({ type: 'watch', frame: f.id, video: false });
      return;
    }
    if (this.videoTransport !== 'webrtc' || f.webrtcFellBack) {
      this.transport.send({ type: 'watch', frame: f.id });
      return;
    }
    if (this.transport.state !== 'open') return;
    this.rtc.get(f.id)?.close();
    const rtc = new WebRtcVideo({
      frameId: f.id,
      send: (msg) => this.transport.send(msg),
      target: () => ({ canvas: f.video.canvas, ctx: f.video.ctx }),
      onFallback: (reason) => this._webrtcFellBack(f, rtc, reason),
      onDrawn: () => f.video.drawn(),
      iceServers: this.iceServers,
      ...(this.webrtcTimeoutMs ? { connectTimeoutMs: this.webrtcTimeoutMs } : {}),
    });
    this.rtc.set(f.id, rtc);
    rtc.start();
  }

  /** WebRTC did not work out for this frame: watch it over the WebSocket from now on. */
  _webrtcFellBack(f, rtc, reason) {
    if (this.rtc.get(f.id) !== rtc) return;
    this.rtc.delete(f.id);
    f.webrtcFellBack = reason;
    this.emit('webrtc-fallback', { frame: f.id, reason });
    this.transport.send({ type: 'unwatch', frame: f.id }); // ends the peer connection if the service kept it
    this.transport.send({ type: 'watch', frame: f.id });
  }

  /** A patch could not be decoded here: reconnect without `patches` and `copies` (the service then sends H.264
   * only; copies come only inside patch messages). */
  _videoOnly(error) {
    if (!this.transport.features.includes(FEATURE_PATCHES)) return;
    this.transport.features = this.transport.features.filter((f) => f !== FEATURE_PATCHES && f !== FEATURE_COPIES);
    this.emit('patches-off', { error });
    this.transport.ws?.close(1000, 'video only');
  }

  unwatch(frameId) {
    const f = this.router.remove(frameId);
    if (!f) return;
    this.rtc.get(frameId)?.close();
    this.rtc.delete(frameId);
    f.video.dispose();
    this.transport.send({ type: 'unwatch', frame: frameId });
  }

  /** Ask for an IDR (the decoder lost sync). */
  requestKeyframe(frameId, reason = 'asked') {
    if (this.transport.send({ type: 'keyframe', frame: frameId })) {
      this.emit('keyframe-request', { frame: frameId, reason });
    }
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
    return this.sendStep(frameId, 'input', list.length === 1 ? { event: list[0] } : { events: list }, { grant });
  }

  /**
   * Send one driver step: `input`, or `page`, `navigate`, `dialog-answer` (docs/protocol.md), with the grant
   * and the next seq; answered `input-ack` or an `error` with that seq.
   * @param {string} frameId
   * @param {string} type
   * @param {object} fields the message's own fields (`{action, page}`, `{url}`, `{id, accept, text}`...)
   * @param {{grant?: string}} [opts] the drive grant; default the client's token
   * @returns {number|null} the seq, or null when not connected
   */
  sendStep(frameId, type, fields, { grant } = {}) {
    const seq = this.seq + 1;
    const msg = { type, frame: frameId, grant: grant || this.token, seq, ...fields };
    if (!this.transport.send(msg)) return null;
    this.seq = seq;
    this.pendingInput.set(seq, { frame: frameId, sentAt: now() });
    return seq;
  }

  /** Input messages sent and not yet acknowledged. */
  get inputInFlight() {
    return this.pendingInput.size;
  }

  /**
   * Take the frame over as a person (the view's Take over): a `take-over` step, under a token fresh from the
   * token function when there is one (a grant older than the driving agent's last step is refused `superseded`),
   * which then also carries this connection's later steps. While it holds, the agent's steps are refused.
   * @param {string} frameId
   * @returns {Promise<number|null>} the seq (answered `input-ack` or an `error`), or null when not connected
   */
  async takeOver(frameId) {
    let grant = this.token;
    try {
      grant = await this.transport.renewToken();
    } catch {
      // the token function failed: try with the token we have (the service says whether it is new enough)
    }
    return this.sendStep(frameId, 'take-over', {}, { grant });
  }

  /**
   * Hand the frame back (the driver only): nobody drives until a newer grant (the agent's next step), and the
   * note (at most 2000 characters) goes to every watcher and answers the agent's open request for help.
   * @param {string} frameId
   * @param {string} [note]
   * @returns {number|null} the seq, or null when not connected
   */
  release(frameId, note = '') {
    return this.sendStep(frameId, 'release', note ? { note } : {});
  }

  /** Who drives the frame, its open request for help, the agent's last pointer and the page's cursor: its
   * HandoffState (lib/handoff.js), or null when the frame is not watched. */
  handoff(frameId) {
    return this.router.get(frameId)?.handoff ?? null;
  }

  /** What the frame's browser shows and asks (pages, dialogs, file choosers, downloads, copied text): its
   * TabState (lib/tabstate.js), or null when the frame is not watched. */
  tab(frameId) {
    return this.router.get(frameId)?.tab ?? null;
  }

  /** Counters and statistics of one frame (for overlays and tests). */
  info(frameId) {
    const f = this.router.get(frameId);
    if (!f) return null;
    const rtc = this.rtc.get(frameId);
    // Which transport carries the pictures: `webrtc` once connected (`webrtc-connecting` before).
    const transport = !rtc ? 'websocket' : rtc.state === 'connected' ? 'webrtc' : 'webrtc-connecting';
    return { ...f.info(), transport, webrtcFallback: f.webrtcFellBack ?? null };
  }

  /** Close for good. */
  close() {
    if (this._followVisibility) globalThis.document.removeEventListener('visibilitychange', this._followVisibility);
    for (const rtc of this.rtc.values()) rtc.close(); // (the transport's close does not go through onDown)
    this.rtc.clear();
    this.transport.close();
    this.router.dispose();
  }
}

Object.assign(FramestreamClient.prototype, debugHooks);
