// Is the connection still alive? A browser's WebSocket sends no pings of its own and says nothing when the path
// to the service dies silently (a laptop that slept, a Wi-Fi or NAT that dropped the connection, a proxy that
// hangs): the socket stays open, nothing more arrives, and the canvas keeps showing its last picture as `live`
// while the page has moved on. So the client asks: after `idleMs` with no message at all it sends `ping`
// (answered `pong` at once, docs/protocol.md); once `quietMs` have passed since that ping with nothing received,
// the connection is quiet (the viewer says it is checking it, rather than show its last picture as live); and
// once `answerMs` have, it is dead and is given up (then reconnected).
//
// Any message counts as an answer, pictures included: a long keyframe on a slow link may arrive before the pong
// queued behind it. Pure: time is a parameter (monotonic milliseconds), so a timer that fired late (a throttled
// background tab, a machine back from sleep) first pings and then waits a full `answerMs` of its own before it
// declares anything dead.

export const IDLE_MS = 5000;
export const QUIET_MS = 2000; // a pong takes milliseconds: two seconds without one is worth saying
export const ANSWER_MS = 10_000;

export const PING = 'ping';
export const QUIET = 'quiet';
export const DEAD = 'dead';

export class Liveness {
  /** @param {{idleMs?: number, quietMs?: number, answerMs?: number}} [o] */
  constructor({ idleMs = IDLE_MS, quietMs, answerMs = ANSWER_MS } = {}) {
    quietMs ??= Math.min(QUIET_MS, answerMs / 2);
    if (!(idleMs > 0) || !(answerMs > 0) || !(quietMs > 0 && quietMs < answerMs)) {
      throw new RangeError('liveness: idleMs and answerMs must be positive, quietMs between 0 and answerMs');
    }
    this.idleMs = idleMs;
    this.quietMs = quietMs;
    this.answerMs = answerMs;
    this.heardAt = null; // when the last message came (null: not started)
    this.pingAt = null; // when the unanswered ping went (null: none is out)
    this.quiet = false; // QUIET was said for that ping
    this.pings = 0;
  }

  /** A connection was welcomed at `now`: that counts as hearing from it. */
  start(now) {
    this.heardAt = now;
    this.pingAt = null;
    this.quiet = false;
  }

  /** No connection any more: nothing to check until the next `start`. */
  stop() {
    this.heardAt = null;
    this.pingAt = null;
    this.quiet = false;
  }

  /**
   * A message (any) came at `now`.
   * @returns {boolean} whether the connection had been said to be quiet (it is not any more)
   */
  heard(now) {
    if (this.heardAt === null) return false;
    const wasQuiet = this.quiet;
    this.heardAt = now;
    this.pingAt = null;
    this.quiet = false;
    return wasQuiet;
  }

  /**
   * What is due at `now`: PING (send one now), QUIET (its answer is late: say so), DEAD (give the connection
   * up) or null.
   * @returns {'ping'|'quiet'|'dead'|null}
   */
  check(now) {
    if (this.heardAt === null) return null;
    if (this.pingAt !== null) {
      if (now - this.pingAt >= this.answerMs) return DEAD;
      if (this.quiet || now - this.pingAt < this.quietMs) return null;
      this.quiet = true;
      return QUIET;
    }
    if (now - this.heardAt < this.idleMs) return null;
    this.pingAt = now;
    this.pings += 1;
    return PING;
  }

  /** When `check` may next have something to do (null: not started). */
  nextCheckAt() {
    if (this.heardAt === null) return null;
    if (this.pingAt === null) return this.heardAt + this.idleMs;
    return this.pingAt + (this.quiet ? this.answerMs : this.quietMs);
  }
}

/**
 * The policy on a timer, for a client's connection: `ping(seq)`, `quiet(true|false)` and `dead()` are called as
 * they fall due; `heard()` on every message. The timer is set once an idle period (messages only move `heardAt`
 * on) and looks again when it fires; it never keeps a Node process running.
 */
export class LivenessWatch {
  /**
   * @param {{idleMs?: number, quietMs?: number, answerMs?: number}|undefined} options the policy's times
   * @param {{now: () => number, ping: (seq: number) => void, quiet?: (quiet: boolean) => void, dead: () => void}} o
   */
  constructor(options, { now, ping, quiet = () => {}, dead }) {
    this.policy = new Liveness(options);
    Object.assign(this, { now, ping, quiet, dead });
    this.timer = null;
  }

  /** A connection was welcomed: watch it. */
  start() {
    this.policy.start(this.now());
    this._schedule();
  }

  /** No connection any more. */
  stop() {
    clearTimeout(this.timer);
    this.timer = null;
    this.policy.stop();
  }

  /** A message came. */
  heard() {
    if (this.policy.heard(this.now())) this.quiet(false);
  }

  _schedule() {
    clearTimeout(this.timer);
    const at = this.policy.nextCheckAt();
    if (at === null) return;
    this.timer = setTimeout(() => this._check(), Math.max(50, at - this.now()));
    this.timer.unref?.();
  }

  _check() {
    this.timer = null;
    const due = this.policy.check(this.now());
    if (due === PING) {
      this.ping(this.policy.pings);
    } else if (due === QUIET) {
      this.quiet(true);
    } else if (due === DEAD) {
      this.stop();
      this.dead();
      return;
    }
    this._schedule();
  }
}
