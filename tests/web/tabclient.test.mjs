// The client's part in the tab UI (web/lib/client.js, router.js): driver steps (`page`, `navigate`,
// `dialog-answer`) carry the grant and the next seq exactly as `input` does and are counted until answered; the
// router keeps each watched frame's tab state from the service's messages and forgets the open dialogs and file
// choosers with the connection (watching again tells them anew).
import { test, beforeEach, afterEach } from 'node:test';
import assert from 'node:assert/strict';
import { FakeSocket, b64url, decoders, installWebCodecs, sockets, tick } from './fakes.mjs';

installWebCodecs();
const { FramestreamClient } = await import('../../web/framestream.js');

const DRIVE = `${b64url(JSON.stringify({ role: 'drive', sub: 'ana' }))}.mac`;
const made = [];

async function openClient() {
  const c = new FramestreamClient({ url: 'ws://x/ws', token: DRIVE, WebSocket: FakeSocket, sizeCanvas: false,
    backoff: { baseMs: 5, maxMs: 20, jitter: 0 } });
  made.push(c);
  c.watch('f1', null);
  c.open();
  await tick();
  const ws = sockets.at(-1);
  ws.receive({ type: 'welcome', protocol: 1, sandbox: 'local', shared_frames: true });
  return { c, ws };
}

beforeEach(() => { sockets.length = 0; decoders.length = 0; });
afterEach(() => { for (const c of made.splice(0)) c.close(); });

test('driver steps carry the grant and the seq after the last input, and wait for their answer', async () => {
  const { c, ws } = await openClient();
  assert.equal(c.sendInput('f1', { kind: 'text', text: 'a' }), 1);
  assert.equal(c.sendStep('f1', 'page', { action: 'activate', page: 'p2' }), 2);
  assert.equal(c.sendStep('f1', 'navigate', { url: 'https://x.test/' }), 3);
  assert.equal(c.sendStep('f1', 'dialog-answer', { id: 'd1', accept: true, text: 'Bo' }, { grant: 'newer' }), 4);
  assert.deepEqual(ws.sent.slice(2), [
    { type: 'input', frame: 'f1', grant: DRIVE, seq: 1, event: { kind: 'text', text: 'a' } },
    { type: 'page', frame: 'f1', grant: DRIVE, seq: 2, action: 'activate', page: 'p2' },
    { type: 'navigate', frame: 'f1', grant: DRIVE, seq: 3, url: 'https://x.test/' },
    { type: 'dialog-answer', frame: 'f1', grant: 'newer', seq: 4, id: 'd1', accept: true, text: 'Bo' },
  ]);
  assert.equal(c.inputInFlight, 4);
  ws.receive({ type: 'input-ack', frame: 'f1', seq: 2 });
  ws.receive({ type: 'error', code: 'navigation-failed', message: 'no', frame: 'f1', seq: 3 });
  assert.equal(c.inputInFlight, 2);
});

test('no step while not connected, and the seq is not used up', async () => {
  const c = new FramestreamClient({ url: 'ws://x/ws', token: DRIVE, WebSocket: FakeSocket });
  made.push(c);
  assert.equal(c.sendStep('f1', 'navigate', { action: 'back' }), null);
  assert.equal(c.seq, 0);
});

test('each watched frame keeps its tab state; a lost connection forgets its dialogs and choosers', async () => {
  const { c, ws } = await openClient();
  const heard = [];
  c.on('dialog', (d) => heard.push([d.id, c.tab('f1').dialog?.id])); // the state is updated before listeners
  ws.receive({ type: 'frame-state', frame: 'f1', state: 'live', url: 'https://x.test/', viewers: 1, driver: null,
    pages: [{ id: 'p1', url: 'https://x.test/', title: 'X', active: true, responsive: true }] });
  ws.receive({ type: 'dialog', frame: 'f1', id: 'd1', page: 'p1', kind: 'confirm', message: 'Sure?', default: '' });
  ws.receive({ type: 'dialog', frame: 'other', id: 'd9', page: 'p1', kind: 'alert', message: '', default: '' });
  ws.receive({ type: 'file-chooser', frame: 'f1', id: 'c1', page: 'p1', multiple: false, accept: [] });
  ws.receive({ type: 'download', frame: 'f1', id: 'D1', name: 'a.bin', size: 3, state: 'done' });
  const tab = c.tab('f1');
  assert.deepEqual(heard, [['d1', 'd1'], ['d9', 'd1']]);
  assert.equal(tab.activePage.title, 'X');
  assert.equal(tab.chooser.id, 'c1');
  assert.equal(c.tab('other'), null);

  ws.close(1006, 'gone');
  await tick();
  assert.equal(tab.dialog, null);
  assert.equal(tab.chooser, null);
  assert.equal(tab.downloads.size, 1);
  c.unwatch('f1');
  assert.equal(c.tab('f1'), null);
});
