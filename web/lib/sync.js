// Decoder synchronisation: which pictures may be decoded, and when to ask for a keyframe.
// Pure: time is a parameter (milliseconds, any monotonic clock).
//
// Rules (PROTOCOL.md): pictures of a frame carry a u32 `sequence` shared by all its viewers. A delta may only
// be decoded if it directly follows the last picture decoded; otherwise pictures were lost (or skipped by the
// server for a slow viewer) and the decoder must wait for a keyframe, which the viewer asks for with
// {"type":"keyframe"}. A decoder error puts us in the same waiting state. While waiting, the request is
// repeated at most once per `retryMs` as long as deltas keep arriving without a keyframe.

export const DECODE = 'decode';
export const DROP = 'drop';

/** The u32 that follows `seq`, wrapping at 2^32. */
export function nextSequence(seq) {
  return (seq + 1) >>> 0;
}

export class DecodeSync {
  constructor({ retryMs = 1000 } = {}) {
    this.retryMs = retryMs;
    this.lastSequence = null; // sequence of the last picture handed to the decoder
    this.waiting = true; // waiting for a keyframe (a fresh decoder always is)
    this.lastRequestAt = null; // when we last asked for a keyframe
    this.gaps = 0;
    this.dropped = 0;
    this.keyframeRequests = 0;
  }

  /**
   * Start over (new decoder, new watch, reconnect): wait for a keyframe. The server sends one after
   * `watch` unasked, so no request is made here; `requestNow` forces one.
   * @returns {boolean} whether to send a keyframe request now
   */
  reset(now, { requestNow = false } = {}) {
    this.lastSequence = null;
    this.waiting = true;
    if (requestNow) return this._request(now);
    this.lastRequestAt = now; // the server's own keyframe is on its way; only re-ask after retryMs
    return false;
  }

  /** The decoder failed: wait for a keyframe and ask for one now. */
  onDecoderError(now) {
    this.waiting = true;
    this.lastSequence = null;
    return this._request(now);
  }

  /**
   * Decide about one arriving picture.
   * @returns {{action: 'decode'|'drop', requestKeyframe: boolean, gap: boolean}}
   */
  onPicture({ sequence, keyframe }, now) {
    if (keyframe) {
      this.waiting = false;
      this.lastSequence = sequence >>> 0;
      return { action: DECODE, requestKeyframe: false, gap: false };
    }
    if (this.waiting) {
      this.dropped += 1;
      const again = this.lastRequestAt === null || now - this.lastRequestAt >= this.retryMs;
      return { action: DROP, requestKeyframe: again ? this._request(now) : false, gap: false };
    }
    if (this.lastSequence !== null && (sequence >>> 0) !== nextSequence(this.lastSequence)) {
      // A gap (or a picture from the past): what follows cannot be decoded correctly.
      this.gaps += 1;
      this.dropped += 1;
      this.waiting = true;
      this.lastSequence = null;
      return { action: DROP, requestKeyframe: this._request(now), gap: true };
    }
    this.lastSequence = sequence >>> 0;
    return { action: DECODE, requestKeyframe: false, gap: false };
  }

  _request(now) {
    this.lastRequestAt = now;
    this.keyframeRequests += 1;
    return true;
  }
}
