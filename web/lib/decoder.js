// One frame's pictures: a WebCodecs VideoDecoder fed with the frame's video messages, kept in step by
// DecodeSync (after a gap or a broken decoder only a keyframe may be decoded), and every decoded picture drawn
// into the canvas at once. It knows nothing of the socket: keyframe requests and errors go to callbacks.

import { DecodeSync, DECODE } from './sync.js';
import { StatsWindow } from './stats.js';
import { monotonicMs as now, wallUs } from './clock.js';

// More queued chunks than this means the decoder cannot keep up: drop and wait for a keyframe.
export const MAX_DECODE_QUEUE = 24;

/** Whether this browser can decode (WebCodecs needs a secure context: https or http://127.0.0.1/localhost). */
export function webCodecsAvailable() {
  return typeof globalThis.VideoDecoder === 'function' && typeof globalThis.EncodedVideoChunk === 'function';
}

export class FrameDecoder {
  /**
   * @param {HTMLCanvasElement|null} canvas where pictures are drawn (null: decode only)
   * @param {object} o
   * @param {boolean} [o.sizeCanvas=true] set the canvas's CSS width (and aspect ratio) to the frame's CSS size
   * @param {(reason: string) => void} o.onKeyframeNeeded ask the service for a keyframe
   * @param {(detail: {error: string, fatal?: boolean}) => void} o.onError the decoder failed (fatal: it
   *   cannot even be configured)
   */
  constructor(canvas, { sizeCanvas = true, onKeyframeNeeded, onError }) {
    this.sizeCanvas = sizeCanvas;
    this.onKeyframeNeeded = onKeyframeNeeded;
    this.onError = onError;
    this.config = null; // last video-config
    this.decoder = null;
    this.decoderConfig = null;
    this.sync = new DecodeSync();
    this.stats = new StatsWindow();
    this.inflight = []; // [{captureUs, t0}] in decode order
    this.counts = { drawn: 0, decoded: 0, decoderErrors: 0, decoderResets: 0, keyframeRequests: 0, gaps: 0 };
    this.lastDraw = null; // {captureUs, drawnUs}
    this.dropNext = 0; // debug: video messages to throw away, as if lost
    this.tracer = null; // debug: called for every video message and every picture drawn
    this.markLive();
    this.setCanvas(canvas);
  }

  /** Pictures captured before now were sent from the frame's recent past (a join): their age is not transport
   * latency, so the statistics leave them out. */
  markLive() {
    this.liveFromUs = wallUs();
  }

  /** Draw into `canvas` from now on (it gets a 2D context). */
  setCanvas(canvas) {
    this.canvas = canvas;
    this.ctx = canvas ? canvas.getContext('2d', { alpha: false }) : null;
    if (this.config) this.configure(this.config);
  }

  /** The decoder's part of the client's info(). */
  info() {
    return {
      config: this.config,
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
    if (this.canvas) {
      // Setting width/height clears a canvas even to the same value: only touch them on a real change, so a
      // re-watch after a reconnect keeps the last picture on screen.
      if (this.canvas.width !== msg.width) this.canvas.width = msg.width;
      if (this.canvas.height !== msg.height) this.canvas.height = msg.height;
      if (this.sizeCanvas) {
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
      this.onError({ error: String(err), fatal: true });
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
    this.onError({ error: String(err && err.message ? err.message : err) });
    if (this.sync.onDecoderError(now())) this.requestKeyframe('decoder-error');
  }

  requestKeyframe(reason) {
    this.counts.keyframeRequests += 1;
    this.onKeyframeNeeded(reason);
  }

  /** One binary video message for this frame (parsed by header.js). */
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

  /** A decoded picture: draw it at once and let it go. */
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

  /** The connection is gone: wait for the keyframe that starts the next watch. */
  reset() {
    this.inflight = [];
    this.sync.reset(now());
  }

  dispose() {
    this.closeDecoder();
  }
}
