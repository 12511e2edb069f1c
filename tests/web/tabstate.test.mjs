// A frame's tab state (web/lib/tabstate.js) and the pure helpers of the tab UI: what the service's messages leave
// to show, labels, the address field, dialog answers, byte counts, URLs next to the WebSocket; and clipboard text
// (web/lib/clipboard.js): what a paste becomes on the wire.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  TabState, TAB_MESSAGES, acceptAttribute, addressToUrl, dialogAnswer, dialogButtons, formatBytes, httpUrl, pageLabel,
} from '../../web/lib/tabstate.js';
import { MAX_PASTE_CHARS, clipboardPreview, pasteEvents } from '../../web/lib/clipboard.js';

const page = (id, extra = {}) => ({ id, url: `https://x.test/${id}`, title: '', active: false, responsive: true,
  ...extra });
const dialog = (id, kind = 'confirm', extra = {}) => ({ type: 'dialog', frame: 'f', id, page: 'p1', kind,
  message: 'Sure?', default: '', ...extra });

test('frame-state gives the pages and URL; no pages while no browser runs', () => {
  const t = new TabState();
  assert.equal(t.apply({ type: 'frame-state', frame: 'f', state: 'live', url: 'https://x.test/a',
    pages: [page('a', { active: true }), page('b')] }), true);
  assert.equal(t.url, 'https://x.test/a');
  assert.deepEqual(t.pages.map((p) => p.id), ['a', 'b']);
  assert.equal(t.activePage.id, 'a');
  t.apply({ type: 'frame-state', frame: 'f', state: 'launching', url: 'https://x.test/a' });
  assert.deepEqual(t.pages, []);
  assert.equal(t.activePage, null);
});

test('dialogs and file choosers open and close by id; the oldest open one is shown', () => {
  const t = new TabState();
  t.apply(dialog('d1'));
  t.apply(dialog('d2', 'prompt'));
  assert.equal(t.dialog.id, 'd1');
  assert.equal(t.apply({ type: 'dialog-closed', frame: 'f', id: 'd1', reason: 'answered' }), true);
  assert.equal(t.dialog.id, 'd2');
  assert.equal(t.apply({ type: 'dialog-closed', frame: 'f', id: 'nope', reason: 'answered' }), false);
  // told again on a re-watch: still one entry
  t.apply(dialog('d2', 'prompt'));
  assert.equal(t.dialogs.size, 1);
  t.apply({ type: 'file-chooser', frame: 'f', id: 'c1', page: 'p1', multiple: true, accept: ['.txt'] });
  assert.equal(t.chooser.id, 'c1');
  t.apply({ type: 'file-chooser-closed', frame: 'f', id: 'c1' });
  assert.equal(t.chooser, null);
});

test('a lost connection forgets dialogs and choosers (told again on watch) but keeps downloads', () => {
  const t = new TabState();
  t.apply(dialog('d1'));
  t.apply({ type: 'file-chooser', frame: 'f', id: 'c1', page: 'p1', multiple: false, accept: [] });
  t.apply({ type: 'download', frame: 'f', id: 'D1', name: 'a.bin', size: 0, state: 'started' });
  t.connectionLost();
  assert.equal(t.dialog, null);
  assert.equal(t.chooser, null);
  assert.equal(t.downloads.size, 1);
});

test('downloads keep their first order and take each update', () => {
  const t = new TabState();
  t.apply({ type: 'download', frame: 'f', id: 'D1', name: 'a.bin', size: 0, state: 'started' });
  t.apply({ type: 'download', frame: 'f', id: 'D2', name: 'b.bin', size: 0, state: 'started' });
  t.apply({ type: 'download', frame: 'f', id: 'D1', name: 'a.bin', size: 300, state: 'done' });
  assert.deepEqual([...t.downloads.values()].map((d) => [d.id, d.state, d.size]),
    [['D1', 'done', 300], ['D2', 'started', 0]]);
});

test('copied text counts each copy, even the same text twice', () => {
  const t = new TabState();
  t.apply({ type: 'clipboard', frame: 'f', text: 'hi' });
  t.apply({ type: 'clipboard', frame: 'f', text: 'hi' });
  assert.deepEqual(t.clipboard, { text: 'hi', count: 2 });
  assert.equal(t.apply({ type: 'control', frame: 'f' }), false);
  assert.deepEqual([...TAB_MESSAGES].sort(),
    ['clipboard', 'dialog', 'dialog-closed', 'download', 'file-chooser', 'file-chooser-closed']);
  assert.deepEqual(JSON.parse(JSON.stringify(t.info())).clipboard, { text: 'hi', count: 2 });
});

test('a tab is labelled by its title, else its URL', () => {
  assert.equal(pageLabel(page('a', { title: '  Inbox ' })), 'Inbox');
  assert.equal(pageLabel(page('a', { title: '   ' })), 'https://x.test/a');
  assert.equal(pageLabel({ id: 'x', url: '', title: '' }), 'new page');
});

test('accept lists become the file input accept attribute', () => {
  assert.equal(acceptAttribute(['image/png', '.txt']), 'image/png,.txt');
  assert.equal(acceptAttribute([]), '');
  assert.equal(acceptAttribute(undefined), '');
  assert.equal(acceptAttribute(['', 3, 'a/b']), 'a/b');
});

test('the address field: a bare host gets https, a host with a port http, a scheme is kept', () => {
  assert.equal(addressToUrl('example.org/x?q=1'), 'https://example.org/x?q=1');
  assert.equal(addressToUrl('  https://a.test/  '), 'https://a.test/');
  assert.equal(addressToUrl('http://127.0.0.1:8000/p'), 'http://127.0.0.1:8000/p');
  assert.equal(addressToUrl('localhost:8080/app'), 'http://localhost:8080/app');
  assert.equal(addressToUrl('127.0.0.1:9'), 'http://127.0.0.1:9');
  assert.equal(addressToUrl('about:blank'), 'about:blank'); // the service says no, not the viewer
  assert.equal(addressToUrl('   '), null);
});

test('dialog answers: OK and Cancel, text only for a prompt accepted', () => {
  assert.deepEqual(dialogAnswer(dialog('d', 'confirm'), true, 'ignored'), { id: 'd', accept: true });
  assert.deepEqual(dialogAnswer(dialog('d', 'prompt'), true, ''), { id: 'd', accept: true, text: '' });
  assert.deepEqual(dialogAnswer(dialog('d', 'prompt'), true, 'Ana'), { id: 'd', accept: true, text: 'Ana' });
  assert.deepEqual(dialogAnswer(dialog('d', 'prompt'), false, 'Ana'), { id: 'd', accept: false });
  assert.deepEqual(dialogButtons('alert'), [['OK', true]]);
  assert.deepEqual(dialogButtons('confirm'), [['OK', true], ['Cancel', false]]);
  assert.deepEqual(dialogButtons('beforeunload'), [['Leave', true], ['Stay', false]]);
});

test('byte counts for people', () => {
  assert.equal(formatBytes(0), '0 B');
  assert.equal(formatBytes(1023), '1023 B');
  assert.equal(formatBytes(1536), '1.5 KB');
  assert.equal(formatBytes(20 * 1024 * 1024), '20 MB');
  assert.equal(formatBytes(-1), '');
});

test('HTTP URLs sit next to the WebSocket, under its path prefix', () => {
  assert.equal(httpUrl('ws://127.0.0.1:7682/ws', 'frames/f1/downloads/D1'), 'http://127.0.0.1:7682/frames/f1/downloads/D1');
  assert.equal(httpUrl('wss://gw.test/sandboxes/s1/ws', 'frames/f1/file-chooser/c1'),
    'https://gw.test/sandboxes/s1/frames/f1/file-chooser/c1');
});

test('a paste is one paste event; text too long for one goes as typed text in pieces', () => {
  assert.deepEqual(pasteEvents('hello'), [{ kind: 'paste', text: 'hello' }]);
  assert.deepEqual(pasteEvents(''), []);
  const most = '😀'.repeat(MAX_PASTE_CHARS); // code points, not UTF-16 units
  assert.deepEqual(pasteEvents(most), [{ kind: 'paste', text: most }]);
  const long = 'a'.repeat(MAX_PASTE_CHARS + 1);
  const events = pasteEvents(long);
  assert.ok(events.length > 1 && events.every((e) => e.kind === 'text'));
  assert.equal(events.map((e) => e.text).join(''), long);
  // a paste message within the protocol's 64 KiB even when every character is escaped in JSON
  const worst = JSON.stringify({ type: 'input', frame: 'f'.repeat(64), grant: 'g'.repeat(1024), seq: 1,
    event: pasteEvents('\u0001'.repeat(MAX_PASTE_CHARS))[0] });
  assert.ok(new TextEncoder().encode(worst).length <= 64 * 1024);
});

test('copied text previews on one line', () => {
  assert.equal(clipboardPreview('  a\n\n b\tc '), 'a b c');
  assert.equal(clipboardPreview('x'.repeat(100), 10), `${'x'.repeat(9)}…`);
});
