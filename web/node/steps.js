// The events of one agent step, from what an agent means: a click, a drag, a chord ("Control+A"), as
// framestream/client/steps.py builds them. Pure; coordinates are the frame's CSS pixels.

export const BUTTON_BITS = Object.freeze({ left: 1, right: 2, middle: 4, back: 8, forward: 16 });
export const MODIFIER_BITS = Object.freeze({ Alt: 1, Control: 2, Meta: 4, Shift: 8 });
export const MAX_TEXT = 10000; // characters per text event (the contract's limit)

const MODIFIER_ALIASES = {
  alt: 'Alt', option: 'Alt', control: 'Control', ctrl: 'Control', meta: 'Meta', cmd: 'Meta', command: 'Meta',
  super: 'Meta', shift: 'Shift',
};
const MODIFIER_CODES = { Alt: 'AltLeft', Control: 'ControlLeft', Meta: 'MetaLeft', Shift: 'ShiftLeft' };
const KEY_ALIASES = {
  enter: 'Enter', return: 'Enter', tab: 'Tab', escape: 'Escape', esc: 'Escape', backspace: 'Backspace',
  delete: 'Delete', del: 'Delete', space: ' ', up: 'ArrowUp', down: 'ArrowDown', left: 'ArrowLeft',
  right: 'ArrowRight', arrowup: 'ArrowUp', arrowdown: 'ArrowDown', arrowleft: 'ArrowLeft',
  arrowright: 'ArrowRight', home: 'Home', end: 'End', pageup: 'PageUp', pagedown: 'PageDown', insert: 'Insert',
  plus: '+',
};
const UNSHIFTED = '1234567890-=[]\\;\',./`';
const SHIFTED = '!@#$%^&*()_+{}|:"<>?~';
const PUNCTUATION_CODES = {
  '-': 'Minus', '=': 'Equal', '[': 'BracketLeft', ']': 'BracketRight', '\\': 'Backslash', ';': 'Semicolon',
  "'": 'Quote', ',': 'Comma', '.': 'Period', '/': 'Slash', '`': 'Backquote', ' ': 'Space',
};

const mouse = (action, x, y, button, buttons, clicks, modifiers = 0) => ({
  kind: 'mouse', action, x, y, button, buttons, clicks, modifiers,
});

/** Move there, then press and release `count` times (`count` 2 is a double click: clicks 1 then 2). The move first,
 * as a person's hand and Playwright's click make it: some controls act only once hovered (a date field's calendar
 * button ignored a bare press). */
export function click(x, y, { button = 'left', count = 1, modifiers = 0 } = {}) {
  const bit = BUTTON_BITS[button];
  if (!bit) throw new RangeError(`unknown button ${JSON.stringify(button)}`);
  const events = [mouse('move', x, y, 'none', 0, 0, modifiers)];
  for (let n = 1; n <= count; n += 1) {
    events.push(mouse('down', x, y, button, bit, n, modifiers), mouse('up', x, y, button, 0, n, modifiers));
  }
  return events;
}

export function move(x, y, { modifiers = 0 } = {}) {
  return [mouse('move', x, y, 'none', 0, 0, modifiers)];
}

/** Press at (x0, y0), move in `moves` even steps (pages see a real drag), release at (x1, y1). */
export function drag(x0, y0, x1, y1, { moves = 10, button = 'left' } = {}) {
  const bit = BUTTON_BITS[button];
  if (!bit) throw new RangeError(`unknown button ${JSON.stringify(button)}`);
  const n = Math.max(1, moves);
  const events = [mouse('move', x0, y0, 'none', 0, 0), mouse('down', x0, y0, button, bit, 1)];
  for (let i = 1; i <= n; i += 1) {
    events.push(mouse('move', x0 + ((x1 - x0) * i) / n, y0 + ((y1 - y0) * i) / n, 'none', bit, 0));
  }
  events.push(mouse('up', x1, y1, button, 0, 1));
  return events;
}

/** A wheel at (x, y): positive `dy` scrolls down, positive `dx` right (CSS pixels). */
export function scroll(x, y, { dx = 0, dy = 0, modifiers = 0 } = {}) {
  return [{ kind: 'wheel', x, y, dx, dy, modifiers }];
}

/** Typed text (inserted as IME text), in pieces of the contract's 10000 characters. */
export function text(value) {
  const cps = [...String(value)];
  if (!cps.length) throw new RangeError('text to type must not be empty');
  const events = [];
  for (let i = 0; i < cps.length; i += MAX_TEXT) events.push({ kind: 'text', text: cps.slice(i, i + MAX_TEXT).join('') });
  return events;
}

/** "Control+Shift+a" -> {modifiers: ["Control", "Shift"], key: "a"} (the last part is the key: "Control++"). */
export function parseChord(spec) {
  let head;
  let key;
  if (spec === '+') [head, key] = ['', '+'];
  else if (spec.endsWith('++')) [head, key] = [spec.slice(0, -2), '+'];
  else {
    const at = spec.lastIndexOf('+');
    [head, key] = at < 0 ? ['', spec] : [spec.slice(0, at), spec.slice(at + 1)];
  }
  key = [...key].length === 1 ? key : key.trim();
  if (!key) throw new RangeError(`bad key chord ${JSON.stringify(spec)}`);
  const modifiers = [];
  for (const mod of head ? head.split('+').map((m) => m.trim()) : []) {
    const name = MODIFIER_ALIASES[mod.toLowerCase()];
    if (!name) throw new RangeError(`unknown modifier ${JSON.stringify(mod)} in ${JSON.stringify(spec)} (Control, Shift, Alt, Meta)`);
    modifiers.push(name);
  }
  if ([...key].length > 1) key = MODIFIER_ALIASES[key.toLowerCase()] ?? KEY_ALIASES[key.toLowerCase()] ?? key;
  return { modifiers, key };
}

function codeOf(key) {
  if ([...key].length !== 1) return '';
  if (/^[a-z]$/i.test(key)) return `Key${key.toUpperCase()}`;
  if (/^[0-9]$/.test(key)) return `Digit${key}`;
  return PUNCTUATION_CODES[key] ?? '';
}

/** The key events of a chord such as "Enter", "Control+A" or "Shift+Tab" (as the Python client sends them). */
export function chord(spec) {
  const { modifiers, key: parsed } = parseChord(spec);
  let key = parsed;
  const code = codeOf(key);
  if (/^\p{L}$/u.test(key)) key = modifiers.includes('Shift') ? key.toUpperCase() : key.toLowerCase();
  else if (modifiers.includes('Shift') && UNSHIFTED.includes(key) && key.length === 1) key = SHIFTED[UNSHIFTED.indexOf(key)];
  const events = [];
  let held = 0;
  for (const mod of modifiers) {
    held |= MODIFIER_BITS[mod];
    events.push({ kind: 'key', action: 'down', key: mod, code: MODIFIER_CODES[mod], modifiers: held });
  }
  const release = () => {
    const ups = [];
    let h = held;
    for (const mod of [...modifiers].reverse()) {
      h &= ~MODIFIER_BITS[mod];
      ups.push({ kind: 'key', action: 'up', key: mod, code: MODIFIER_CODES[mod], modifiers: h });
    }
    return ups;
  };
  if (key in MODIFIER_BITS) { // a lone modifier ("Shift")
    return [...events,
      { kind: 'key', action: 'down', key, code: MODIFIER_CODES[key], modifiers: held | MODIFIER_BITS[key] },
      { kind: 'key', action: 'up', key, code: MODIFIER_CODES[key], modifiers: held }, ...release()];
  }
  events.push({ kind: 'key', action: 'down', key, code, modifiers: held },
    { kind: 'key', action: 'up', key, code, modifiers: held });
  return [...events, ...release()];
}
