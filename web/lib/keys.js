// Keyboard and mouse vocabulary of the wire protocol, and the bookkeeping that prevents stuck keys.
// Pure: takes plain objects shaped like DOM events.

export const MOD_ALT = 1;
export const MOD_CTRL = 2;
export const MOD_META = 4;
export const MOD_SHIFT = 8;

/** The CDP modifier mask (Alt 1, Ctrl 2, Meta 4, Shift 8) of a DOM event. */
export function modifiersOf(e) {
  return (e.altKey ? MOD_ALT : 0) | (e.ctrlKey ? MOD_CTRL : 0) | (e.metaKey ? MOD_META : 0)
    | (e.shiftKey ? MOD_SHIFT : 0);
}

const BUTTON_NAMES = ['left', 'middle', 'right'];
/** DOM MouseEvent.button (0 left, 1 middle, 2 right, 3 back, 4 forward) to the wire name. */
export function buttonName(domButton) {
  return BUTTON_NAMES[domButton] ?? 'none';
}

// DOM MouseEvent.buttons and CDP `buttons` share one bit layout: left 1, right 2, middle 4, back 8, forward 16.
export const BUTTON_BITS = { left: 1, right: 2, middle: 4 };

/** The button to name on a move: the first held one, else "none". */
export function heldButtonName(buttons) {
  if (buttons & 1) return 'left';
  if (buttons & 2) return 'right';
  if (buttons & 4) return 'middle';
  return 'none';
}

/** Key events that belong to the viewer's own browser rather than the frame. */
export function isPasteShortcut(e) {
  return Boolean((e.key === 'v' || e.key === 'V' || e.code === 'KeyV') && (e.ctrlKey || e.metaKey) && !e.altKey);
}

/** Whether a keydown is part of an IME composition (then the composition's text is sent, not the keys). */
export function isComposing(e) {
  return Boolean(e.isComposing) || e.keyCode === 229 || e.key === 'Process';
}

/** The wire event of a DOM key event. */
export function keyEvent(action, e) {
  const ev = { kind: 'key', action, key: e.key, code: e.code, modifiers: modifiersOf(e) };
  if (action === 'down' && e.repeat) ev.repeat = true;
  return ev;
}

/** The protocol takes at most 10000 characters per text event and 64 KiB per message: long text (a big
 * paste) goes as several text events of at most `max` code points, each to be sent in its own message. */
export function textEvents(text, max = 4000) {
  const chars = Array.from(text); // code points, so a surrogate pair is never split
  const out = [];
  for (let i = 0; i < chars.length; i += max) out.push({ kind: 'text', text: chars.slice(i, i + max).join('') });
  return out;
}

/**
 * Keys and buttons held down in the frame, so that leaving (blur, hidden tab, lost control) releases them:
 * a key released while the viewer had no focus would otherwise stay down in the frame forever.
 */
export class HeldInputs {
  constructor() {
    this.keys = new Map(); // code (or key when code is empty) -> {key, code}
    this.buttons = 0; // DOM/CDP bit mask
    this.last = { x: 0, y: 0 }; // last pointer position sent, frame CSS px
  }

  keyDown(e) {
    this.keys.set(e.code || e.key, { key: e.key, code: e.code });
  }

  keyUp(e) {
    this.keys.delete(e.code || e.key);
  }

  /** Whether a keyup belongs to a key we sent down (others, e.g. the end of a composition, are not sent). */
  isHeld(e) {
    return this.keys.has(e.code || e.key);
  }

  buttonDown(name, x, y) {
    this.buttons |= BUTTON_BITS[name] ?? 0;
    this.last = { x, y };
  }

  buttonUp(name, x, y) {
    this.buttons &= ~(BUTTON_BITS[name] ?? 0);
    this.last = { x, y };
  }

  moved(x, y) {
    this.last = { x, y };
  }

  get any() {
    return this.keys.size > 0 || this.buttons !== 0;
  }

  /** Wire events that release everything held (buttons first, then keys), and forget them. */
  releaseAll() {
    const events = [];
    let buttons = this.buttons;
    for (const name of ['left', 'right', 'middle']) {
      const bit = BUTTON_BITS[name];
      if (buttons & bit) {
        buttons &= ~bit;
        events.push({ kind: 'mouse', action: 'up', x: this.last.x, y: this.last.y, button: name, buttons,
          clicks: 1, modifiers: 0 });
      }
    }
    for (const { key, code } of this.keys.values()) {
      events.push({ kind: 'key', action: 'up', key, code, modifiers: 0 });
    }
    this.keys.clear();
    this.buttons = 0;
    return events;
  }
}
