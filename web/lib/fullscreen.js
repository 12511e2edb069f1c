// Full screen for a frame view (view.js): the view (its bar, tabs and picture) fills the screen, the picture as
// large as fits at the frame's aspect ratio (object-fit: contain, which input, drops and the agent's pointer map
// through: coords.js). For a view that drives, every key then goes to the frame where the browser has the Keyboard
// Lock API (Chromium): browser shortcuts such as Ctrl+W, Ctrl+T or Ctrl+N reach the frame's page instead of closing
// or opening the viewer's own tabs (the frame's browser does not act on them either: browser/key_guard.py), and Esc
// reaches the page (held down, it leaves full screen, as the browser says). Elsewhere (Firefox, Safari) the browser
// keeps its shortcuts and Esc leaves full screen at once.

export const FULLSCREEN_CSS = `
.fs-frame:fullscreen{display:flex;width:100vw;height:100vh;max-width:none;box-sizing:border-box;padding:6px;
  background:#111}
.fs-frame:fullscreen .fs-stage{display:block;flex:1 1 0;min-height:0;width:100%;max-width:none}
.fs-frame:fullscreen .fs-canvas{width:100% !important;height:100% !important;aspect-ratio:auto !important;
  max-width:none;object-fit:contain}
`;

export const LOCKED_TEXT = 'Full screen: every key goes to the page, browser shortcuts too. Hold Esc to leave.';
export const UNLOCKED_TEXT = 'Full screen: press Esc to leave.';

/**
 * Wire the view's full-screen button.
 * @param {{el: HTMLElement, button: HTMLButtonElement, drive: boolean,
 *          input: () => ({focus(): void, sink: HTMLElement}|null), toast: (text: string, ms?: number) => void}} o
 *   `el` the view (what fills the screen), `input` its input handle: its keyboard sink is moved into the view
 *   while it is full screen (the browser lets nothing outside the full-screen element take the focus) and focused,
 *   so keys go to the frame at once rather than to the button just pressed
 * @returns {{toggle(): Promise<boolean>, destroy(): void}} toggle resolves with whether the view is now full screen
 */
export function mountFullscreen({ el, button, drive, input, toast }) {
  const doc = el.ownerDocument;
  const keyboard = doc.defaultView?.navigator?.keyboard;
  if (!doc.fullscreenEnabled || typeof el.requestFullscreen !== 'function') {
    button.hidden = true; // an iframe without allow="fullscreen", or a browser without the API
    return { toggle: async () => false, destroy() {} };
  }
  const full = () => doc.fullscreenElement === el;
  let wasFull = false;
  let locked = false;
  let home = null; // where the keyboard sink lives while the view is not full screen
  const render = () => {
    button.textContent = full() ? 'exit full screen' : 'full screen';
    button.setAttribute('aria-pressed', String(full()));
  };
  render();

  const onChange = async () => {
    render();
    if (full() && !wasFull) {
      wasFull = true;
      const handle = input();
      if (handle) {
        home = handle.sink.parentNode;
        el.appendChild(handle.sink);
        handle.focus();
      }
      if (drive && typeof keyboard?.lock === 'function') {
        try {
          await keyboard.lock(); // every key: no list
          locked = full(); // left again meanwhile: unlocked below
          if (!locked) keyboard.unlock();
        } catch {
          locked = false; // refused (not the top-level document, say): the browser keeps its shortcuts
        }
      }
      if (full()) toast(locked ? LOCKED_TEXT : UNLOCKED_TEXT, 5000);
    } else if (!full() && wasFull) {
      wasFull = false;
      const sink = input()?.sink;
      if (sink && home && sink.parentNode === el) home.appendChild(sink);
      home = null;
      if (locked) keyboard.unlock();
      locked = false;
    }
  };
  doc.addEventListener('fullscreenchange', onChange);

  const toggle = async () => {
    try {
      if (full()) await doc.exitFullscreen();
      else await el.requestFullscreen({ navigationUI: 'hide' });
    } catch (e) {
      toast(`Full screen refused: ${e?.message || e}`);
    }
    return full();
  };
  button.addEventListener('click', () => { toggle(); });

  return {
    toggle,
    destroy() {
      doc.removeEventListener('fullscreenchange', onChange);
      if (locked) keyboard.unlock();
      locked = false;
      if (full()) doc.exitFullscreen().catch(() => {});
    },
  };
}
