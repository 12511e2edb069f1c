// DOM input capture for a driving viewer: turns mouse, wheel, keyboard, IME, paste and touch on a canvas into
// wire events in the frame's CSS pixels and hands them to `send`. The pure parts are coords.js, keys.js and
// queue.js; this file is the glue to the DOM.

import { contentBox, mapToFrame, wheelPixels } from './coords.js';
import {
  HeldInputs, buttonName, heldButtonName, isComposing, isPasteShortcut, keyEvent, modifiersOf, textEvents,
} from './keys.js';
import { InputQueue } from './queue.js';
import { pasteEvents } from './clipboard.js';

const px = (v) => parseFloat(v) || 0;

/**
 * Where `canvas` shows the picture on the page: its content box (client coordinates, border and padding taken
 * off) and its CSS object-fit. Input maps pointer positions through it (coords.js), overlays the other way.
 * @param {HTMLCanvasElement} canvas
 * @returns {{box: {left:number, top:number, width:number, height:number}, fit: string}}
 */
export function canvasPlacement(canvas) {
  const cs = canvas.ownerDocument.defaultView.getComputedStyle(canvas);
  const box = contentBox(canvas.getBoundingClientRect(), {
    borderLeft: px(cs.borderLeftWidth), borderTop: px(cs.borderTopWidth),
    borderRight: px(cs.borderRightWidth), borderBottom: px(cs.borderBottomWidth),
    paddingLeft: px(cs.paddingLeft), paddingTop: px(cs.paddingTop),
    paddingRight: px(cs.paddingRight), paddingBottom: px(cs.paddingBottom),
  });
  return { box, fit: cs.objectFit || 'fill' };
}

/**
 * Capture input on `canvas`.
 * @param {HTMLCanvasElement} canvas
 * @param {object} o
 * @param {(events: object[]) => void} o.send called with one or more wire events (one `input` step)
 * @param {() => ({width:number, height:number}|null)} o.frameSize the frame's CSS size (null: not known yet)
 * @param {() => boolean} [o.busy] true while too much input is unacknowledged: moves and wheel turns wait
 *   (and coalesce) until it is false again; buttons, keys and text are never held back
 * @returns {{detach(): void, releaseAll(): void, focus(): void, sink: HTMLTextAreaElement}}
 */
export function attachInput(canvas, { send, frameSize, busy = () => false }) {
  const doc = canvas.ownerDocument;
  const win = doc.defaultView;
  const held = new HeldInputs();
  const queue = new InputQueue();
  const listeners = [];
  let raf = 0;

  const on = (target, type, fn, opts) => {
    target.addEventListener(type, fn, opts);
    listeners.push(() => target.removeEventListener(type, fn, opts));
  };

  // Keyboard input goes to an invisible textarea that takes focus when the canvas is used: a canvas cannot
  // receive IME composition or paste, a textarea can.
  const sink = doc.createElement('textarea');
  sink.className = 'fs-input-sink';
  sink.setAttribute('aria-label', 'keyboard input for the shared frame');
  for (const [k, v] of Object.entries({ autocomplete: 'off', autocorrect: 'off', autocapitalize: 'off',
    spellcheck: 'false', tabindex: '-1' })) sink.setAttribute(k, v);
  Object.assign(sink.style, {
    position: 'fixed', left: '0px', top: '0px', width: '1px', height: '1px', opacity: '0', border: '0',
    padding: '0', margin: '0', resize: 'none', overflow: 'hidden', pointerEvents: 'none', zIndex: '-1',
  });
  doc.body.appendChild(sink);
  if (!canvas.hasAttribute('tabindex')) canvas.tabIndex = 0;

  const map = (clientX, clientY) => {
    const size = frameSize();
    if (!size) return null;
    const { box, fit } = canvasPlacement(canvas);
    return mapToFrame(clientX, clientY, box, size.width, size.height, fit);
  };

  const emit = (events) => {
    if (events.length) send(events);
  };

  const tick = () => {
    raf = 0;
    if (!queue.pending) return;
    if (busy()) {
      raf = win.requestAnimationFrame(tick); // keep coalescing until the server caught up
      return;
    }
    emit(queue.flush());
  };
  const schedule = () => {
    if (!raf) raf = win.requestAnimationFrame(tick);
  };
  const now = (ev) => emit(queue.pushNow(ev));
  const sendText = (text) => {
    for (const ev of textEvents(text)) now(ev);
  };

  const focusSink = (clientX, clientY) => {
    if (clientX !== undefined) {
      // Put the (invisible) caret under the pointer so an IME's candidate window opens near it.
      sink.style.left = `${Math.round(clientX)}px`;
      sink.style.top = `${Math.round(clientY)}px`;
    }
    if (doc.activeElement !== sink) sink.focus({ preventScroll: true });
  };

  // --- mouse ---
  on(canvas, 'mousedown', (e) => {
    const p = map(e.clientX, e.clientY);
    e.preventDefault(); // no text selection, no middle-button autoscroll, keep focus on our sink
    focusSink(e.clientX, e.clientY);
    if (!p) return;
    const button = buttonName(e.button);
    held.buttonDown(button, p.x, p.y);
    now({ kind: 'mouse', action: 'down', x: p.x, y: p.y, button, buttons: e.buttons, clicks: e.detail || 1,
      modifiers: modifiersOf(e) });
  });
  // Moves and ups are watched on the window so a drag that leaves the canvas goes on (clamped to the edge).
  on(win, 'mousemove', (e) => {
    if (e.target !== canvas && !held.buttons) return;
    const p = map(e.clientX, e.clientY);
    if (!p) return;
    held.moved(p.x, p.y);
    queue.pushMove({ kind: 'mouse', action: 'move', x: p.x, y: p.y, button: heldButtonName(e.buttons),
      buttons: e.buttons, clicks: 0, modifiers: modifiersOf(e) });
    schedule();
  });
  on(win, 'mouseup', (e) => {
    const button = buttonName(e.button);
    if (!(held.buttons & ({ left: 1, right: 2, middle: 4 }[button] || 0))) return;
    const p = map(e.clientX, e.clientY) || held.last;
    held.buttonUp(button, p.x, p.y);
    now({ kind: 'mouse', action: 'up', x: p.x, y: p.y, button, buttons: e.buttons, clicks: e.detail || 1,
      modifiers: modifiersOf(e) });
  });
  on(canvas, 'contextmenu', (e) => e.preventDefault());
  on(canvas, 'dblclick', (e) => e.preventDefault()); // the second down already carried clicks: 2
  on(canvas, 'wheel', (e) => {
    e.preventDefault();
    const p = map(e.clientX, e.clientY);
    if (!p) return;
    const size = frameSize();
    const dx = wheelPixels(e.deltaX, e.deltaMode, { pageHeight: size ? size.width : 800 });
    const dy = wheelPixels(e.deltaY, e.deltaMode, { pageHeight: size ? size.height : 800 });
    emit(queue.pushWheel({ kind: 'wheel', x: p.x, y: p.y, dx, dy, modifiers: modifiersOf(e) }));
    schedule();
  }, { passive: false });

  // --- keyboard, IME, paste ---
  on(canvas, 'focus', () => focusSink());
  on(sink, 'keydown', (e) => {
    if (isComposing(e)) return; // the composition's text is sent when it ends
    if (isPasteShortcut(e)) return; // let the browser paste: the 'paste' event sends the text
    e.preventDefault(); // the host page must not act on it (Tab, Backspace, shortcuts...)
    e.stopPropagation();
    held.keyDown(e);
    now(keyEvent('down', e));
  });
  on(sink, 'keyup', (e) => {
    if (!held.isHeld(e)) return;
    e.preventDefault();
    e.stopPropagation();
    held.keyUp(e);
    now(keyEvent('up', e));
  });
  on(sink, 'compositionend', (e) => {
    if (e.data) sendText(e.data);
    sink.value = '';
  });
  on(sink, 'input', (e) => {
    // Text that came without key events we sent (on-screen keyboards send keyCode 229 keydowns).
    if (!e.isComposing && e.inputType === 'insertText' && e.data) sendText(e.data);
    if (!e.isComposing) sink.value = '';
  });
  on(sink, 'paste', (e) => {
    e.preventDefault();
    const text = e.clipboardData ? e.clipboardData.getData('text/plain') : '';
    for (const ev of pasteEvents(text)) now(ev); // a real paste in the page (its paste event, clipboardData)
  });

  // --- touch ---
  const touchHandler = (action) => (e) => {
    e.preventDefault(); // no scrolling, no emulated mouse events
    focusSink();
    // As Chromium's Input.dispatchTouchEvent wants it (docs/protocol.md): start lists the fingers that touched
    // down, move every finger on the canvas, end the fingers lifted; cancel cancels all.
    const list = action === 'move' ? e.targetTouches : e.changedTouches;
    const points = [];
    for (const t of list) {
      const p = map(t.clientX, t.clientY);
      if (p) points.push({ id: t.identifier, x: p.x, y: p.y });
    }
    if (points.length || action === 'cancel') now({ kind: 'touch', action, points });
  };
  for (const action of ['start', 'move', 'end', 'cancel']) {
    on(canvas, `touch${action}`, touchHandler(action), { passive: false });
  }

  // --- no stuck keys or buttons ---
  const releaseAll = () => {
    if (held.any) emit([...queue.flush(), ...held.releaseAll()]);
  };
  on(sink, 'blur', releaseAll);
  on(win, 'blur', releaseAll);
  on(doc, 'visibilitychange', () => {
    if (doc.visibilityState === 'hidden') releaseAll();
  });

  return {
    sink,
    releaseAll,
    focus: () => focusSink(),
    detach() {
      releaseAll();
      if (raf) win.cancelAnimationFrame(raf);
      for (const off of listeners) off();
      sink.remove();
    },
  };
}
