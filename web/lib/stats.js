// Rolling one-second statistics for the stats overlay. Pure: time is a parameter (ms).

export class StatsWindow {
  constructor({ windowMs = 1000 } = {}) {
    this.windowMs = windowMs;
    this.bytes = []; // [t, n]
    this.frames = []; // [t, decodeMs, latencyMs]
    this.totals = { bytes: 0, pictures: 0, drawn: 0 };
  }

  _trim(now) {
    const from = now - this.windowMs;
    while (this.bytes.length && this.bytes[0][0] <= from) this.bytes.shift();
    while (this.frames.length && this.frames[0][0] <= from) this.frames.shift();
  }

  /** A binary message of n bytes arrived. */
  received(n, now) {
    this.bytes.push([now, n]);
    this.totals.bytes += n;
    this.totals.pictures += 1;
    this._trim(now);
  }

  /** A picture was drawn; decodeMs from decode() to output, latencyMs from capture to drawing (null: not
   * known, e.g. a picture from before the viewer joined). */
  drawn(now, decodeMs, latencyMs) {
    this.frames.push([now, decodeMs, latencyMs]);
    this.totals.drawn += 1;
    this._trim(now);
  }

  /** {fps, kbps, decodeMs, latencyMs} over the last window; the averages are null without pictures. */
  snapshot(now) {
    this._trim(now);
    const seconds = this.windowMs / 1000;
    const bits = this.bytes.reduce((s, [, n]) => s + n, 0) * 8;
    const avg = (i) => {
      const known = this.frames.filter((f) => f[i] !== null && f[i] !== undefined);
      return known.length ? known.reduce((s, f) => s + f[i], 0) / known.length : null;
    };
    return {
      fps: this.frames.length / seconds,
      kbps: bits / 1000 / seconds,
      decodeMs: avg(1),
      latencyMs: avg(2),
    };
  }
}

/** One line of text for the overlay. */
export function formatStats(s) {
  const ms = (v) => (v === null || v === undefined ? '–' : `${v.toFixed(1)} ms`);
  return `${s.fps.toFixed(0)} fps · ${s.kbps.toFixed(0)} kbit/s · decode ${ms(s.decodeMs)} · latency ${ms(s.latencyMs)}`;
}

/**
 * One line of text for the overlay about the link (issue 18), from info(): `config` (the last video-config) and
 * `link` (decoder.js linkInfo). On the light stream: "light stream 1280x800 · link ~870 kbit/s · 812 kbit/s
 * arriving" (the server's measure of the link when it gave one); on the full stream "full stream · 2400 kbit/s
 * arriving", with "· skipping" while the server skips pictures for this viewer.
 */
export function formatLink(config, link) {
  if (!link) return '';
  const arriving = `${link.kbps.toFixed(0)} kbit/s arriving`;
  if (!link.light) return `full stream · ${arriving}${link.skipped ? ' · skipping' : ''}`;
  const size = config ? ` ${config.width}x${config.height}` : '';
  const measured = link.serverKbps !== null && link.serverKbps !== undefined
    ? ` · link ~${Math.round(link.serverKbps)} kbit/s` : '';
  return `light stream${size}${measured} · ${arriving}`;
}
