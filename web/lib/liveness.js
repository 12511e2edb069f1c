// Is the connection still alive? A browser's WebSocket sends no pings of its own and says nothing when the path
// to the service dies silently (a laptop that slept, a Wi-Fi or NAT that dropped the connection, a proxy that
// hangs): the socket stays open, nothing more arrives, and the canvas keeps showing its last picture as `live`
// while the page has moved on. So the client asks: after `idleMs` with no message at all it sends `ping`
// (answered `pong` at once, docs/protocol.md), and once `answerMs` have passed since that ping with still
// nothing received, the connection is dead and is given up (then reconnected).
//
// Any message counts as an answer, pictures included: a long keyframe on a slow link may arrive before the pong
// queued behind it. Pure: time is a parameter (monotonic milliseconds), so a timer that fired late (a throttled
// background tab, a machine back from sleep) first pings and then waits a full `answerMs` of its own before it
// declares anything dead.

export const IDLE_MS = 5000;
export const ANSWER_MS = 10_000;

export const PING = 'ping';
export const DEAD = 'dead';

export class Liveness {
  /** @param {{idleMs?: number, answerMs?: number}} [o] */
  constructor({ idleMs = IDLE_MS, answerMs = ANSWER_MS } = {}) {
    if (!(idleMs > 0) || !(answerMs > 0)) throw new RangeError('liveness: idleMs and answerMs must be positive');
    this.idleMs = idleMs;
    this.answerMs = answerMs;
    this.heardAt = null; // when the last message came (null: not started)
    this.pingAt = null; // when the unanswered ping went (null: none is out)
    this.pings = 0;
  }

  /** A connection was welcomed at `now`: that counts as hearing from it. */
  start(now) {
    this.heardAt = now;
    this.pingAt = null;
  }

  /** No connection any more: nothing to check until the next `start`. */
  stop() {
    this.heardAt = null;
    this.pingAt = null;
  }

  /** A message (any) came at `now`. */
  heard(now) {
    if (this.heardAt === null) return;
    this.heardAt = now;
    this.pingAt = null;
  }

  /**
   * What is due at `now`: PING (send one now), DEAD (give the connection up) or null.
   * @returns {'ping'|'dead'|null}
   */
  check(now) {
    if (this.heardAt === null) return null;
    if (this.pingAt !== null) return now - this.pingAt >= this.answerMs ? DEAD : null;
    if (now - this.heardAt < this.idleMs) return null;
    this.pingAt = now;
    this.pings += 1;
    return PING;
  }

  /** When `check` may next have something to do (null: not started). */
  nextCheckAt() {
    if (this.heardAt === null) return null;
    return this.pingAt !== null ? this.pingAt + this.answerMs : this.heardAt + this.idleMs;
  }
}
