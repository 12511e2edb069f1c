// Coalescing of input events before they go on the wire. Pure.
//
// Pointer moves and wheel turns come far faster than a frame can show them: only the latest move (and the sum
// of the wheel deltas) is sent once per animation frame. Any other event (button, key, text, touch) goes at
// once, after any move still pending so the frame sees things in the order they happened.

export class InputQueue {
  constructor() {
    this.move = null;
    this.wheel = null;
  }

  /** Remember a move; it replaces an earlier one not yet sent. */
  pushMove(ev) {
    this.move = ev;
  }

  /** Add a wheel turn; deltas add up, position and modifiers are the latest. */
  pushWheel(ev) {
    if (this.wheel && this.wheel.modifiers !== ev.modifiers) {
      // A wheel turn with other modifiers (Ctrl+wheel zooms) must not be merged: send what is pending now.
      const out = this.flush();
      this.wheel = ev;
      return out;
    }
    this.wheel = this.wheel ? { ...ev, dx: this.wheel.dx + ev.dx, dy: this.wheel.dy + ev.dy } : ev;
    return [];
  }

  /** Events to send now for an event that must not wait (pending move and wheel first). */
  pushNow(ev) {
    return [...this.flush(), ev];
  }

  /** The pending events (on an animation frame), in order: move before wheel. */
  flush() {
    const out = [];
    if (this.move) out.push(this.move);
    if (this.wheel) out.push(this.wheel);
    this.move = null;
    this.wheel = null;
    return out;
  }

  get pending() {
    return this.move !== null || this.wheel !== null;
  }
}
