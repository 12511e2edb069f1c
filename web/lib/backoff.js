// Reconnect delays: exponential, capped, with jitter so that many viewers of a restarted service do not all
// come back in the same millisecond. Pure: the random source is a parameter.

export class Backoff {
  /**
   * @param {{baseMs?:number, maxMs?:number, factor?:number, jitter?:number, random?:() => number}} opts
   * jitter is the fraction of each delay that is random: 0.5 gives a delay in [d/2, d].
   */
  constructor({ baseMs = 250, maxMs = 10_000, factor = 2, jitter = 0.5, random = Math.random } = {}) {
    if (!(baseMs > 0) || !(maxMs >= baseMs) || !(factor >= 1) || !(jitter >= 0 && jitter <= 1)) {
      throw new RangeError('Backoff: need 0 < baseMs <= maxMs, factor >= 1, 0 <= jitter <= 1');
    }
    Object.assign(this, { baseMs, maxMs, factor, jitter, random });
    this.attempts = 0;
  }

  /** The un-jittered delay for attempt n (0-based), capped. */
  ceiling(n) {
    return Math.min(this.maxMs, this.baseMs * this.factor ** n);
  }

  /** The delay before the next attempt, in ms; counts the attempt. */
  next() {
    const d = this.ceiling(this.attempts);
    this.attempts += 1;
    const r = Math.min(Math.max(this.random(), 0), 1);
    return Math.round(d * (1 - this.jitter) + d * this.jitter * r);
  }

  /** A connection succeeded: start again from the base delay. */
  reset() {
    this.attempts = 0;
  }
}
