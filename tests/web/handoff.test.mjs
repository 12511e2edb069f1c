// Handing a frame over, as the viewer keeps and shows it (web/lib/handoff.js), and the client's part
// (web/lib/client.js, router.js, transport.js): take-over under a grant fresh from the token function (which also
// becomes the connection's token, sent as `refresh`), release with its note, and each watched frame's state kept
// from the service's messages and forgotten with the connection.
import { test, beforeEach, afterEach } from 'node:test';
import assert from 'node:assert/strict';
import {
  HandoffState, controlView, helpTitle, helpView, pointerSpot, refusalText,
} from '../../web/lib/handoff.js';
import { frameToClient, mapToFrame } from '../../web/lib/coords.js';
import { b64url, decoders, installWebCodecs, sockets, tick, welcomedClient } from './fakes.mjs';

installWebCodecs();
const { FramestreamClient } = await import('../../web/framestream.js');

const control = (fields) => ({ type: 'control', frame: 'f1', driver: null, you: false, kind: null,
  since_us: 1_700_000_000_000_000, held: false, ...fields });
const asked = { type: 'help-requested', frame: 'f1', id: 'h1', reason: 'a login needs your password',
  subject: 'agent', until_us: 1_700_000_300_000_000 };
const drives = { canDrive: true, connected: true };

function stateOf(...messages) {
  const s = new HandoffState();
  for (const m of messages) s.apply(m);
  return s;
}

test('who drives: the agent, a person holding, you; Take over for a driver who does not drive', () => {
  assert.deepEqual(controlView(stateOf(), drives), { kind: null, label: '', takeOver: true, handBack: false });
  const agent = stateOf(control({ driver: 'agent', kind: 'agent' }));
  assert.deepEqual(controlView(agent, drives), { kind: 'agent', label: 'agent', takeOver: true, handBack: false });
  const alice = stateOf(control({ driver: 'alice', kind: 'person', held: true }));
  assert.deepEqual(controlView(alice, drives),
    { kind: 'person', label: 'person · holding', takeOver: true, handBack: false });
  const you = stateOf(control({ driver: 'alice', kind: 'person', held: true, you: true }));
  assert.equal(you.youDrive, true);
  assert.deepEqual(controlView(you, drives), { kind: 'person', label: 'you · holding', takeOver: false,
    handBack: true });
  // The hold lapsed: still the driver, no longer holding.
  assert.equal(controlView(stateOf(control({ driver: 'alice', kind: 'person', you: true })), drives).label, 'you');
});

test('a view-only or disconnected viewer sees who drives and gets no buttons', () => {
  const agent = stateOf(control({ driver: 'agent', kind: 'agent' }));
  for (const o of [{ canDrive: false, connected: true }, { canDrive: true, connected: false }]) {
    const v = controlView(agent, o);
    assert.deepEqual([v.label, v.takeOver, v.handBack], ['agent', false, false]);
    assert.equal(helpView(stateOf(asked), o).takeOver, false);
  }
});

test('handed back: nobody drives, the note is kept; `you` never holds without a driver', () => {
  const s = stateOf(control({ driver: 'alice', kind: 'person', held: true, you: true }),
    control({ driver: null, you: true, note: 'logged in, over to you' }));
  assert.equal(s.youDrive, false);
  assert.equal(s.control.note, 'logged in, over to you');
  assert.deepEqual(controlView(s, drives), { kind: null, label: '', takeOver: true, handBack: false });
});

test('a request for help is shown with its reason and who asked, until it ends; then how it ended', () => {
  const s = stateOf(control({ driver: 'agent', kind: 'agent' }), asked);
  assert.deepEqual(helpView(s, drives), { open: true, subject: 'agent', reason: 'a login needs your password',
    text: 'agent asks for help: a login needs your password', takeOver: true, note: '' });
  s.apply(control({ driver: 'alice', kind: 'person', held: true, you: true }));
  const holding = helpView(s, drives);
  assert.equal(holding.takeOver, false);
  assert.match(holding.note, /hand it back/);
  // The end of an older request leaves the open one alone.
  s.apply({ type: 'help-ended', frame: 'f1', id: 'h0', outcome: 'cancelled' });
  assert.equal(s.help.id, 'h1');
  s.apply({ type: 'help-ended', frame: 'f1', id: 'h1', outcome: 'answered', note: 'done', by: 'alice' });
  assert.equal(s.help, null);
  assert.deepEqual(helpView(s, drives), { open: false, subject: '', reason: '', text: 'Handed back by alice: “done”',
    takeOver: false, note: '' });
  assert.equal(helpView(stateOf(asked, { type: 'help-ended', frame: 'f1', id: 'h1', outcome: 'timeout' }), drives)
    .text, 'Nobody took over in time');
  // A new request replaces what the banner said of the last one.
  assert.equal(helpView(stateOf({ type: 'help-ended', frame: 'f1', id: 'h0', outcome: 'timeout' }, asked), drives)
    .open, true);
  assert.equal(helpView(stateOf(), drives), null);
});

test('the connection lost: who drives and the open request are forgotten (the next watch tells them anew)', () => {
  const s = stateOf(control({ driver: 'agent', kind: 'agent' }), asked,
    { type: 'agent-pointer', frame: 'f1', x: 1, y: 2, action: 'move', subject: 'agent' });
  s.connectionLost();
  assert.equal(s.control, null);
  assert.equal(s.help, null);
  assert.equal(s.apply({ type: 'frame-state', frame: 'f1' }), false);
});

test('the page title says who asks for help, and goes back when nobody does', () => {
  assert.equal(helpTitle('framestream', []), 'framestream');
  assert.equal(helpTitle('framestream', ['agent']), '(1) agent asks for help · framestream');
  assert.equal(helpTitle('framestream', ['agent', 'agent']), '(2) agent asks for help · framestream');
  assert.equal(helpTitle('framestream', ['agent', 'codex']), '(2) requests for help · framestream');
});

test('refusals in plain words', () => {
  assert.match(refusalText('take-over', 'superseded'), /newer grant drives/);
  assert.match(refusalText('release', 'superseded'), /no longer drive/);
  assert.equal(refusalText('take-over', 'forbidden', 'a step grant cannot take over'),
    'This token may not drive this frame (a step grant cannot take over)');
  assert.equal(refusalText('release', 'bad-message'), 'Hand back refused: bad-message');
});

test('the agent pointer sits where input at that spot would map to, whatever the canvas size and fit', () => {
  const frame = { width: 640, height: 400 };
  // Shown at 480x300 at (100, 50) on the page, the overlay's containing block at (90, 40).
  const placement = { box: { left: 100, top: 50, width: 480, height: 300 }, fit: 'fill' };
  const spot = pointerSpot({ x: 140, y: 100 }, placement, frame, { left: 90, top: 40 });
  assert.deepEqual(spot, { left: 10 + 105, top: 10 + 75, inside: true });
  // Letterboxed (contain) in a wide box: the bars are not part of the picture.
  const wide = { box: { left: 0, top: 0, width: 800, height: 400 }, fit: 'contain' };
  assert.deepEqual(pointerSpot({ x: 0, y: 200 }, wide, frame, { left: 0, top: 0 }),
    { left: 80, top: 200, inside: true });
  assert.equal(pointerSpot({ x: 640, y: 10 }, wide, frame, { left: 0, top: 0 }).inside, false);
  // The inverse of the input mapping, for every fit.
  for (const fit of ['fill', 'contain', 'none', 'scale-down']) {
    const box = { left: 7, top: 3, width: 500, height: 420 };
    const p = frameToClient(321.5, 77.25, box, 640, 400, fit);
    assert.deepEqual(mapToFrame(p.x, p.y, box, 640, 400, fit), { x: 321.5, y: 77.25, inside: true }, fit);
  }
});

// -- the client --------------------------------------------------------------------------------------------------

const EXP = Math.floor(Date.now() / 1000) + 120;
const token = (n) => `${b64url(JSON.stringify({ role: 'drive', sub: 'ana', n, exp: EXP + n }))}.m`;
const made = [];

const openClient = (tokenSource) => welcomedClient(FramestreamClient, tokenSource, ['f1'], made);

beforeEach(() => { sockets.length = 0; decoders.length = 0; });
afterEach(() => { for (const c of made.splice(0)) c.close(); });

test('take over carries a token fresh from the token function, which then carries the later steps', async () => {
  let n = 0;
  const { c, ws } = await openClient(async () => token(++n));
  assert.equal(ws.sent[0].token, token(1));
  assert.equal(await c.takeOver('f1'), 1);
  assert.deepEqual(ws.sent.slice(2), [
    { type: 'refresh', token: token(2) },
    { type: 'take-over', frame: 'f1', grant: token(2), seq: 1 },
  ]);
  assert.equal(c.token, token(2));
  assert.equal(c.sendInput('f1', { kind: 'text', text: 'a' }), 2);
  assert.equal(c.release('f1', 'logged in, over to you'), 3);
  assert.equal(c.release('f1'), 4);
  assert.deepEqual(ws.sent.slice(4), [
    { type: 'input', frame: 'f1', grant: token(2), seq: 2, event: { kind: 'text', text: 'a' } },
    { type: 'release', frame: 'f1', grant: token(2), seq: 3, note: 'logged in, over to you' },
    { type: 'release', frame: 'f1', grant: token(2), seq: 4 },
  ]);
  assert.equal(c.inputInFlight, 4);
});

test('take over with a fixed token, or a failing token function, uses the token it has', async () => {
  const { c, ws } = await openClient(token(7));
  assert.equal(await c.takeOver('f1'), 1);
  assert.deepEqual(ws.sent.at(-1), { type: 'take-over', frame: 'f1', grant: token(7), seq: 1 });
  let calls = 0;
  sockets.length = 0;
  const failing = await openClient(async () => {
    calls += 1;
    if (calls > 1) throw new Error('token endpoint down');
    return token(1);
  });
  assert.equal(await failing.c.takeOver('f1'), 1);
  assert.deepEqual(failing.ws.sent.at(-1), { type: 'take-over', frame: 'f1', grant: token(1), seq: 1 });
  assert.ok(!failing.ws.types().includes('refresh'));
});

test('each watched frame keeps its handoff state; listeners hear the messages after it is updated', async () => {
  const { c, ws } = await openClient(token(1));
  const heard = [];
  for (const type of ['control', 'help-requested', 'help-ended', 'agent-pointer']) {
    c.on(type, (d) => heard.push([type, c.handoff('f1').control?.driver ?? null, c.handoff('f1').help?.id ?? null]));
  }
  ws.receive(control({ driver: 'agent', kind: 'agent' }));
  ws.receive(asked);
  ws.receive({ type: 'agent-pointer', frame: 'f1', x: 140, y: 100, action: 'click', subject: 'agent' });
  ws.receive({ type: 'agent-pointer', frame: 'other', x: 1, y: 1, action: 'move', subject: 'agent' });
  assert.deepEqual(c.handoff('f1').pointer, { x: 140, y: 100, action: 'click', subject: 'agent' });
  ws.receive({ type: 'help-ended', frame: 'f1', id: 'h1', outcome: 'answered', note: 'ok', by: 'ana' });
  assert.deepEqual(heard, [['control', 'agent', null], ['help-requested', 'agent', 'h1'],
    ['agent-pointer', 'agent', 'h1'], ['agent-pointer', 'agent', 'h1'], ['help-ended', 'agent', null]]);
  assert.equal(c.handoff('other'), null);
  ws.receive(asked);
  ws.close(1006);
  await tick();
  assert.equal(c.handoff('f1').control, null);
  assert.equal(c.handoff('f1').help, null);
});
