// The page's cursor on the frame's picture (web/lib/pagecursor.js): only the CSS keywords of a `cursor` message
// pass, the client keeps each watched frame's last one (router.js, handoff.js) and hands listeners only those, and
// the picture's element shows it only while this connection drives the frame.
import { test, beforeEach, afterEach } from 'node:test';
import assert from 'node:assert/strict';
import { PAGE_CURSORS, followPageCursor, pageCursor, shownCursor } from '../../web/lib/pagecursor.js';
import { HandoffState } from '../../web/lib/handoff.js';
import { b64url, decoders, installWebCodecs, sockets, tick, welcomedClient } from './fakes.mjs';

installWebCodecs();
const { FramestreamClient } = await import('../../web/framestream.js');

// The service's list (framestream/core/wire CURSORS), in its order.
const KEYWORDS = ['default', 'none', 'context-menu', 'help', 'pointer', 'progress', 'wait', 'cell', 'crosshair',
  'text', 'vertical-text', 'alias', 'copy', 'move', 'no-drop', 'not-allowed', 'grab', 'grabbing', 'e-resize',
  'n-resize', 'ne-resize', 'nw-resize', 's-resize', 'se-resize', 'sw-resize', 'w-resize', 'ew-resize', 'ns-resize',
  'nesw-resize', 'nwse-resize', 'col-resize', 'row-resize', 'all-scroll', 'zoom-in', 'zoom-out'];

test('every CSS cursor keyword of the protocol passes as it is', () => {
  assert.deepEqual([...PAGE_CURSORS], KEYWORDS);
  for (const k of KEYWORDS) assert.equal(pageCursor(k), k);
  assert.ok(Object.isFrozen(PAGE_CURSORS));
});

test('anything else is refused: lists, url(), expression(), other case or spaces, auto, non-strings', () => {
  for (const bad of ['url(x), pointer', 'url(https://evil.test/c.png), auto', 'expression(alert(1))',
    'pointer;background:url(x)', 'pointer !important', ' pointer', 'pointer ', 'Pointer', 'POINTER', 'auto',
    'inherit', 'initial', 'unset', '', 'hand', '-webkit-grab', 'constructor', 'toString', '__proto__']) {
    assert.equal(pageCursor(bad), null, bad);
  }
  for (const bad of [null, undefined, 0, 1, true, {}, ['pointer'], { toString: () => 'pointer' },
    new String('pointer'), Symbol('pointer')]) {
    assert.equal(pageCursor(bad), null, String(bad?.toString?.() ?? bad));
  }
});

const control = (fields) => ({ type: 'control', frame: 'f1', driver: null, you: false, kind: null,
  since_us: 1_700_000_000_000_000, held: false, ...fields });
const mine = control({ driver: 'ana', kind: 'person', you: true, held: true });
const agents = control({ driver: 'agent', kind: 'agent' });
const cursor = (c, frame = 'f1') => ({ type: 'cursor', frame, cursor: c });

test('a frame keeps its last cursor; shown only while this connection drives', () => {
  const s = new HandoffState();
  assert.equal(s.apply(cursor('pointer')), true);
  assert.equal(s.cursor, 'pointer');
  assert.equal(shownCursor(s), null); // nobody told us we drive yet
  s.apply(mine);
  assert.equal(shownCursor(s), 'pointer');
  assert.equal(s.apply(cursor('url(x), pointer')), false); // ignored: the last one stays
  assert.equal(s.apply(cursor(42)), false);
  assert.equal(s.cursor, 'pointer');
  s.apply(cursor('text'));
  assert.equal(shownCursor(s), 'text');
  s.apply(agents);
  assert.equal(shownCursor(s), null);
  s.apply(mine);
  assert.equal(shownCursor(s), 'text');
  // Handed back (driver null, even with `you`): not ours.
  s.apply(control({ driver: null, you: true, note: 'done' }));
  assert.equal(shownCursor(s), null);
  assert.equal(shownCursor(null), null);
  // A state whose cursor was set by hand is still filtered.
  assert.equal(shownCursor({ youDrive: true, cursor: 'url(x)' }), null);
});

test('the cursor goes with its browser and with the connection', () => {
  const s = new HandoffState();
  s.apply(cursor('pointer'));
  for (const state of ['live', 'paused']) s.apply({ type: 'frame-state', frame: 'f1', state });
  assert.equal(s.cursor, 'pointer');
  for (const state of ['closed', 'error', 'launching']) {
    s.apply(cursor('pointer'));
    s.apply({ type: 'frame-state', frame: 'f1', state });
    assert.equal(s.cursor, null, state);
  }
  s.apply(cursor('wait'));
  s.connectionLost();
  assert.equal(s.cursor, null);
});

// -- the client and the view's element ---------------------------------------------------------------------------

const EXP = Math.floor(Date.now() / 1000) + 120;
const token = `${b64url(JSON.stringify({ role: 'drive', sub: 'ana', exp: EXP }))}.m`;
const made = [];

const openClient = () => welcomedClient(FramestreamClient, token, ['f1', 'f2'], made);

beforeEach(() => { sockets.length = 0; decoders.length = 0; });
afterEach(() => { for (const c of made.splice(0)) c.close(); });

test('listeners hear `cursor` after the frame keeps it, and never a cursor that is not a keyword', async () => {
  const { c, ws } = await openClient();
  const heard = [];
  c.on('cursor', (d) => heard.push([d.frame, d.cursor, c.handoff(d.frame)?.cursor ?? null]));
  ws.receive(cursor('pointer'));
  ws.receive(cursor('url(x), pointer'));
  ws.receive(cursor('expression(alert(1))'));
  ws.receive({ type: 'cursor', frame: 'f1' });
  ws.receive(cursor('text', 'f2'));
  ws.receive(cursor('wait', 'not-watched'));
  assert.deepEqual(heard, [['f1', 'pointer', 'pointer'], ['f2', 'text', 'text'], ['not-watched', 'wait', null]]);
  assert.equal(c.handoff('f1').cursor, 'pointer');
  // Unknown types are still passed on as they are, and change nothing here.
  const other = [];
  c.on('cursor-shape', (d) => other.push(d));
  ws.receive({ type: 'cursor-shape', frame: 'f1', cursor: 'grab' });
  assert.equal(other.length, 1);
  assert.equal(c.handoff('f1').cursor, 'pointer');
});

test('the canvas shows the page cursor while driving, its own otherwise, and the last one again on driving', async () => {
  const { c, ws } = await openClient();
  const canvas = { style: { cursor: '' } };
  const other = { style: { cursor: 'crosshair' } }; // an embedder's element with its own inline cursor
  const follow = followPageCursor(c, 'f1', canvas);
  const follow2 = followPageCursor(c, 'f2', other);
  assert.equal(canvas.style.cursor, '');

  ws.receive(cursor('pointer')); // on watching, before `control`: kept, not shown
  assert.equal(canvas.style.cursor, '');
  ws.receive(mine);
  assert.equal(canvas.style.cursor, 'pointer'); // the last one applies at once
  ws.receive(cursor('text'));
  assert.equal(canvas.style.cursor, 'text');
  ws.receive(cursor('url(x), pointer'));
  assert.equal(canvas.style.cursor, 'text');
  ws.receive(cursor('grab', 'f2')); // another frame's
  assert.equal(canvas.style.cursor, 'text');
  assert.equal(other.style.cursor, 'crosshair'); // f2 is not ours

  ws.receive(control({ driver: 'bob', kind: 'person', held: true })); // someone else drives
  assert.equal(canvas.style.cursor, '');
  ws.receive(agents);
  assert.equal(canvas.style.cursor, '');
  ws.receive(mine);
  assert.equal(canvas.style.cursor, 'text');
  ws.receive(control({ ...mine, frame: 'f2' }));
  assert.equal(other.style.cursor, 'grab');

  // The frame's browser stopped: forgotten, even once we drive again.
  ws.receive({ type: 'frame-state', frame: 'f1', state: 'closed', url: 'https://a.test/', viewers: 1,
    driver: 'ana' });
  assert.equal(canvas.style.cursor, '');
  ws.receive(mine);
  assert.equal(canvas.style.cursor, '');
  ws.receive(cursor('move'));
  assert.equal(canvas.style.cursor, 'move');

  // The connection lost: nobody drives here, and the cursor is told anew after the next watch.
  ws.close(1006);
  await tick();
  assert.equal(canvas.style.cursor, '');
  assert.equal(other.style.cursor, 'crosshair');

  // Unwatched or destroyed: the element's own cursor back.
  follow2.destroy();
  assert.equal(other.style.cursor, 'crosshair');
  follow.destroy();
  assert.equal(canvas.style.cursor, '');
});

test('unwatching forgets the frame\'s cursor; a destroyed follower leaves the element alone', async () => {
  const { c, ws } = await openClient();
  const canvas = { style: { cursor: '' } };
  const follow = followPageCursor(c, 'f1', canvas);
  ws.receive(mine);
  ws.receive(cursor('pointer'));
  assert.equal(canvas.style.cursor, 'pointer');
  follow.destroy();
  assert.equal(canvas.style.cursor, '');
  ws.receive(cursor('wait'));
  assert.equal(canvas.style.cursor, '');
  c.unwatch('f1');
  assert.equal(c.handoff('f1'), null);
  const again = followPageCursor(c, 'f1', canvas);
  assert.equal(canvas.style.cursor, '');
  again.destroy();
});
