// One frame's pictures: a WebCodecs VideoDecoder fed with the frame's video messages, kept in step by
// DecodeSync (after a gap or a broken decoder only a keyframe may be decoded), and every decoded picture drawn
// into the canvas at once. Patch messages (patches.js) share the sequence numbering: decoded off the main
// thread, a picture's patches are drawn together and in order with the pictures (PresentQueue), so a copy (a
// scroll) moves exactly the picture before its message. It knows nothing of the socket: keyframe requests and
// errors go to callbacks.

import { DecodeSync, DECODE } from './sync.js';
import { StatsWindow } from './stats.js';
import { monotonicMs as now, wallUs } from './clock.js';
import { PresentQueue, decodePatches, parsePatchPayload } from './patches.js';

// More queued chunks than this means the decoder cannot keep up: drop and wait for a keyframe.
export const MAX_DECODE_QUEUE = 24;
export const LINK_WINDOW_MS = 3000;
export const SLOW_HOLD_MS = 3000; // as the server's SLOW_HOLD_S (framestream/link.py)

/** Whether this browser can decode (WebCodecs needs a secure context: https or http://127.0.0.1/localhost). */
export function webCodecsAvailable() {
  return typeof globalThis.VideoDecoder === 'function' && typeof globalThis.EncodedVideoChunk === 'function';
}

/**
 * The size the canvas's pixels get for `config` (a video-config), given the canvas as it is.
 *
 * The full stream's config: its size (the frame at its dpr), as always. The light stream's (`stream: 'light'`,
 * the frame at its CSS size): the canvas keeps its size when it has the same aspect and at least the light
 * stream's pixels (the full stream's 2560x1600 for a 1280x800 dpr 2 frame), and the light pictures are drawn
 * scaled to it: resizing would clear it (a black flash until the light keyframe is drawn) and nothing on the page
 * moves either way (its CSS size is the frame's). A canvas without such a size (a viewer that joins already
 * slow) gets the light stream's own size: those are all the pixels there are, and the frame's dpr is not in a
 * light config (the viewer's own devicePixelRatio says nothing of it), so anything larger would be a guess that
 * only costs memory; the CSS size keeps the layout the same when the full stream comes.
 */
export function canvasSize(canvas, config) {
  if (config.stream === 'light' && canvas.width >= config.width && canvas.height >= config.height
      && Math.abs(canvas.width * config.height - canvas.height * config.width) < Math.max(canvas.width,
        canvas.height)) {
    return { width: canvas.width, height: canvas.height };
  }
  return { width: config.width, height: config.height };
}

// Canvases a picture was drawn into: one watched again (after an unwatch, or moved here) holds an older picture.
const drawnInto = new WeakSet();

export class FrameDecoder {
  /**
   * @param {HTMLCanvasElement|null} canvas where pictures are drawn (null: decode only)
   * @param {object} o
   * @param {boolean} [o.sizeCanvas=true] set the canvas's CSS width (and aspect ratio) to the frame's CSS size
   * @param {(reason: string) => void} o.onKeyframeNeeded ask the service for a keyframe
   * @param {(detail: {error: string, fatal?: boolean}) => void} o.onError the decoder failed (fatal: it
   *   cannot even be configured)
   * @param {(error: string) => void} [o.onPatchFailure] a patch could not be decoded (go video-only)
   * @param {(stale: boolean) => void} [o.onStale] the canvas's picture may be older than the page (true: the
   *   connection was lost, or the frame unseen, since it was drawn), or shows the page again (false)
   */
  constructor(canvas, { sizeCanvas = true, onKeyframeNeeded, onError, onPatchFailure, onStale }) {
    this.sizeCanvas = sizeCanvas;
    this.onKeyframeNeeded = onKeyframeNeeded;
    this.onError = onError;
    this.onPatchFailure = onPatchFailure;
    this.onStale = onStale;
    this.stale = false; // the canvas holds a picture drawn before the connection was lost or the frame unseen
    this.hidden = false; // watched without pictures (unseen: the page hidden or the view out of sight)
    this.present = new PresentQueue((entry) => this.drawEntry(entry));
    this.config = null; // last video-config
    this.decoder = null;
    this.decoderConfig = null;
    this.sync = new DecodeSync();
    this.stats = new StatsWindow();
    // The link as this viewer sees it (issue 18): what arrived over a few seconds, and when the server last
    // skipped pictures for it (a sequence jump within one stream). Whether it is on the light stream, and the
    // server's measure of its link, come with video-config (`stream: 'light'`, `link_kbps`).
    this.linkWindow = new StatsWindow({ windowMs: LINK_WINDOW_MS });
    this.lastSequence = null;
    this.skippedAt = null;
    this.inflight = []; // [{captureUs, t0}] in decode order
    this.counts = { drawn: 0, decoded: 0, decoderErrors: 0, decoderResets: 0, keyframeRequests: 0, gaps: 0,
      patches: 0, patchesDrawn: 0, patchErrors: 0 };
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
    if (canvas && drawnInto.has(canvas)) this.setStale(true);
    if (this.config) this.configure(this.config);
  }

  /** The decoder's part of the client's info(). */
  info() {
    return {
      config: this.config,
      waitingForKeyframe: this.sync.waiting,
      stale: this.stale,
      decoderState: this.decoder ? this.decoder.state : null,
      ...this.counts,
      dropped: this.sync.dropped,
      lastDraw: this.lastDraw,
      stats: this.stats.snapshot(now()),
      link: this.linkInfo(now()),
    };
  }

  /** Whether the last video-config was the frame's light stream (issue 18: the server sends it to a viewer whose
   * link cannot carry the frame's stream; the picture at the frame's CSS size). */
  get light() {
    return !!this.config && this.config.stream === 'light';
  }

  /**
   * The link as this viewer knows it:
   * - kbps: what arrived over the last LINK_WINDOW_MS (pictures and patches; a probe's padding is not counted);
   * - light: the server sends this viewer the frame's light stream (its last video-config said so);
   * - serverKbps: on the light stream, the server's measure of this viewer's link when it switched (the
   *   config's `link_kbps`); null when not given or on the full stream;
   * - skipped: the server skipped pictures for this viewer within SLOW_HOLD_MS (a jump in `sequence` within one
   *   stream: each stream numbers its own pictures, and a video-config starts the count afresh);
   * - keyframesOnly: kept for older readers of info(): skipped while on the full stream (it then resumes at the
   *   next keyframe; a viewer that keeps skipping is moved to the light stream, which `light` tells).
   */
  linkInfo(t) {
    const light = this.light;
    const skipped = this.skippedAt !== null && t - this.skippedAt < SLOW_HOLD_MS;
    const serverKbps = light && Number.isFinite(this.config.link_kbps) ? this.config.link_kbps : null;
    return {
      kbps: this.linkWindow.snapshot(t).kbps,
      light,
      serverKbps,
      skipped,
      keyframesOnly: skipped && !light,
    };
  }

  /** A video or patch message arrived: the statistics and the link's. */
  arrived(pic, byteLength, t) {
    this.stats.received(byteLength, t);
    this.linkWindow.received(byteLength, t);
    if (this.lastSequence !== null && pic.sequence !== ((this.lastSequence + 1) >>> 0)) this.skippedAt = t;
    this.lastSequence = pic.sequence;
  }

  /**
   * The frame's CSS size from its `frame-state`, before any video-config: the canvas is laid out at that size at
   * once (its backing store stays as it is), so nothing on the page moves when the first picture comes. After a
   * video-config, that one rules.
   */
  reserve(cssWidth, cssHeight) {
    if (this.config || !this.canvas || !this.sizeCanvas) return;
    if (!(Number.isInteger(cssWidth) && cssWidth > 0 && Number.isInteger(cssHeight) && cssHeight > 0)) return;
    this.canvas.style.width = `${cssWidth}px`;
    this.canvas.style.aspectRatio = `${cssWidth} / ${cssHeight}`;
  }

  /** video-config arrived: size the canvas and (re)configure the decoder when codec or size changed. */
  configure(msg) {
    this.config = msg;
    this.lastSequence = null; // a new watch or encoder: its first sequence follows nothing we saw
    if (this.canvas) {
      // Setting width/height clears a canvas even to the same value: only touch them on a real change, so a
      // re-watch after a reconnect keeps the last picture on screen.
      const { width, height } = canvasSize(this.canvas, msg);
      if (this.canvas.width !== width) this.canvas.width = width;
      if (this.canvas.height !== height) this.canvas.height = height;
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
    this.present.clear();
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
    this.present.clear();
    this.onError({ error: String(err && err.message ? err.message : err) });
    if (this.sync.onDecoderError(now())) this.requestKeyframe('decoder-error');
  }

  requestKeyframe(reason) {
    this.counts.keyframeRequests += 1;
    this.onKeyframeNeeded(reason);
  }

  /** One binary video message for this frame (parsed by header.js). */
  onPicture(pic, byteLength) {
    if (this.hidden) return;
    const t = now();
    this.arrived(pic, byteLength, t);
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
      this.present.addVideo(pic.captureUs);
      this.decoder.decode(new EncodedVideoChunk({
        type: pic.keyframe ? 'key' : 'delta',
        timestamp: pic.captureUs,
        data: pic.payload,
      }));
    } catch (err) {
      this.failed(err);
    }
  }

  /** A decoded picture: drawn as soon as everything before it is (at once, unless a patch is decoding). */
  onOutput(frame) {
    const t = now();
    let entry = this.inflight.shift();
    while (entry && entry.captureUs !== frame.timestamp && this.inflight.length) entry = this.inflight.shift();
    this.counts.decoded += 1;
    this.present.videoDecoded(frame, entry ? t - entry.t0 : 0);
  }

  /** One patch message for this frame (parsed by header.js): decoded off the main thread, then presented. */
  onPatch(pic, byteLength) {
    if (this.hidden) return;
    const t = now();
    this.arrived(pic, byteLength, t);
    if (this.dropNext > 0) {
      this.dropNext -= 1;
      this.tracer?.({ sequence: pic.sequence, keyframe: false, patch: true, action: 'lost' });
      return;
    }
    // A patch follows the picture before it like a delta: after a gap it is never drawn (on an older picture).
    const decision = this.sync.onPicture({ sequence: pic.sequence, keyframe: false }, t);
    this.tracer?.({ sequence: pic.sequence, keyframe: false, patch: true, action: decision.action, gap: decision.gap,
      requestKeyframe: decision.requestKeyframe });
    if (decision.gap) this.counts.gaps += 1;
    if (decision.requestKeyframe) this.requestKeyframe(decision.gap ? 'gap' : 'waiting');
    if (decision.action !== DECODE) return;
    this.counts.patches += 1;
    const entry = this.present.addPatch(pic.captureUs);
    let rects;
    try {
      rects = parsePatchPayload(pic.payload);
    } catch (err) {
      this.patchFailed(entry, err);
      return;
    }
    decodePatches(rects).then(
      (patches) => this.present.patchReady(entry, patches),
      (err) => this.patchFailed(entry, err),
    );
  }

  /** A patch could not be decoded: repair the picture with a keyframe and let the client go video-only. */
  patchFailed(entry, err) {
    const error = String(err && err.message ? err.message : err);
    this.counts.patchErrors += 1;
    this.present.drop(entry);
    this.onError({ error: `patch: ${error}` });
    if (this.sync.onDecoderError(now())) this.requestKeyframe('patch-error');
    this.onPatchFailure?.(error);
  }

  /** Draw one presented entry: a decoded picture (then let it go) or a picture's patches, all together. */
  drawEntry(entry) {
    const t = now();
    if (entry.kind === 'video') {
      const frame = entry.frame;
      try {
        if (this.canvas && this.ctx) {
          if (this.light) {
            // The light stream's picture is smaller than the canvas kept from the full stream: scaled to it.
            this.ctx.drawImage(frame, 0, 0, this.canvas.width, this.canvas.height);
          } else {
            const w = frame.displayWidth;
            const h = frame.displayHeight;
            if (this.canvas.width !== w) this.canvas.width = w;
            if (this.canvas.height !== h) this.canvas.height = h;
            this.ctx.drawImage(frame, 0, 0, w, h);
          }
        }
      } finally {
        frame.close();
      }
    } else {
      const outside = this.canvas && entry.patches.find((p) => p.source && !this.copyFits(p));
      if (outside) {
        // A broken message (the protocol's copies stay on the picture): nothing of it is drawn, a keyframe repairs.
        for (const p of entry.patches) p.image?.close?.();
        this.counts.patchErrors += 1;
        const { x, y } = outside.source;
        this.onError({ error: `patch: a copy from (${x}, ${y}) does not fit the picture` });
        if (this.sync.onDecoderError(now())) this.requestKeyframe('patch-error');
        return;
      }
      for (const p of entry.patches) {
        if (p.source) {
          // A copy (a scroll): the canvas onto itself, 1:1 at whole pixels (no smoothing comes into it). HTML's
          // drawImage takes the source before drawing when both are the same canvas, so overlaps are exact.
          if (this.ctx) {
            this.ctx.drawImage(this.canvas, p.source.x, p.source.y, p.width, p.height, p.x, p.y, p.width, p.height);
          }
        } else {
          if (this.ctx) this.ctx.drawImage(p.image, p.x, p.y);
          p.image.close?.();
        }
      }
      this.counts.patchesDrawn += 1;
    }
    const drawnUs = wallUs();
    this.drawn();
    this.lastDraw = { captureUs: entry.captureUs, drawnUs };
    const latencyMs = entry.captureUs >= this.liveFromUs ? (drawnUs - entry.captureUs) / 1000 : null;
    this.stats.drawn(t, entry.decodeMs || 0, latencyMs);
    this.tracer?.(entry.kind === 'patch' ? { drawn: entry.captureUs, patch: true } : { drawn: entry.captureUs });
  }

  /** Whether a copy's source and destination both lie on the canvas. */
  copyFits(p) {
    const { width, height } = this.canvas;
    return Math.max(p.x, p.source.x) + p.width <= width && Math.max(p.y, p.source.y) + p.height <= height;
  }

  /** A picture was drawn (here, or by WebRTC's video): the canvas shows the page as the service sent it. */
  drawn() {
    this.counts.drawn += 1;
    if (this.canvas) drawnInto.add(this.canvas);
    this.setStale(false);
  }

  setStale(stale) {
    if (stale === this.stale) return;
    this.stale = stale;
    this.onStale?.(stale);
  }

  /** The connection is gone: wait for the keyframe that starts the next watch. Until it is drawn the canvas's
   * picture may be older than the page. */
  reset() {
    this.inflight = [];
    this.present.clear();
    this.sync.reset(now());
    if (this.counts.drawn) this.setStale(true);
  }

  /** Nobody sees the frame (its page hidden, its view out of sight), which is watched without pictures: what still
   * comes is not decoded. */
  hide() {
    this.hidden = true;
    this.reset();
  }

  /** The frame is seen again and watched anew: wait for its keyframe (pictures captured before now are from its
   * past for the statistics). */
  show() {
    this.hidden = false;
    this.markLive();
    this.reset();
  }

  dispose() {
    this.closeDecoder();
    this.present.clear();
  }
}
