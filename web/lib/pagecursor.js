// The page's mouse cursor on the frame's picture (docs/protocol.md, `cursor`): the service tells a viewer that may
// drive which cursor the page shows at the driver's pointer (a hand over a link, an I-beam over text), and the
// view puts it on the canvas only while this viewer drives; watching, the canvas keeps its own cursor. The last
// cursor of each watched frame is kept in its HandoffState (handoff.js), with who drives.

/** The CSS cursor keywords a `cursor` message may carry. Anything else is ignored, never given to style.cursor:
 * a `url(...)` there would make the viewer fetch what the page names. */
export const PAGE_CURSORS = Object.freeze([
  'default', 'none', 'context-menu', 'help', 'pointer', 'progress', 'wait', 'cell', 'crosshair', 'text',
  'vertical-text', 'alias', 'copy', 'move', 'no-drop', 'not-allowed', 'grab', 'grabbing', 'e-resize', 'n-resize',
  'ne-resize', 'nw-resize', 's-resize', 'se-resize', 'sw-resize', 'w-resize', 'ew-resize', 'ns-resize',
  'nesw-resize', 'nwse-resize', 'col-resize', 'row-resize', 'all-scroll', 'zoom-in', 'zoom-out',
]);
const ALLOWED = new Set(PAGE_CURSORS);

/**
 * The keyword when it is one of PAGE_CURSORS (exactly: no case folding, no spaces), else null.
 * @param {unknown} keyword
 * @returns {string|null}
 */
export function pageCursor(keyword) {
  return typeof keyword === 'string' && ALLOWED.has(keyword) ? keyword : null;
}

/**
 * The cursor the frame's picture shows: the page's last one while this connection drives the frame, else null
 * (the element's own).
 * @param {{youDrive: boolean, cursor: string|null}|null} handoff the frame's HandoffState (client.handoff())
 * @returns {string|null}
 */
export function shownCursor(handoff) {
  return handoff?.youDrive ? pageCursor(handoff.cursor) : null;
}

/**
 * Keep `el.style.cursor` on the page's cursor while this connection drives `frameId`, and on the element's own
 * inline cursor (usually '': the stylesheet's) otherwise. The client's router keeps the state before its events
 * fire, so each event just reads it again.
 * @param {import('./client.js').FramestreamClient} client
 * @param {string} frameId
 * @param {{style: {cursor: string}}} el the element the frame is drawn on (the canvas)
 * @returns {{update(): void, destroy(): void}} `destroy` gives the element its own cursor back
 */
export function followPageCursor(client, frameId, el) {
  const own = el.style.cursor;
  const update = () => {
    el.style.cursor = shownCursor(client.handoff(frameId)) ?? own;
  };
  // `control`: who drives; `cursor`: the page's; `frame-state`: a browser that stopped took its cursor along.
  const offs = ['control', 'cursor', 'frame-state'].map((type) => client.on(type, (d) => {
    if (d.frame === frameId) update();
  }));
  offs.push(client.on('close', update)); // the connection's control and cursor are gone with it
  update();
  return {
    update,
    destroy() {
      for (const off of offs) off();
      el.style.cursor = own;
    },
  };
}
