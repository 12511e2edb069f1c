// The tab UI's HTTP calls (web/lib/tabhttp.js) with a recording fetch: a file chooser's answer as multipart
// parts named "file" with the drive grant, its cancel as DELETE, a download fetched with the grant, and the
// service's refusals read into one line instead of thrown.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { tabHttp } from '../../web/lib/tabhttp.js';

function recorder(answer) {
  const calls = [];
  const fetch = async (url, init) => {
    calls.push({ url, ...init });
    return answer(url, init);
  };
  return { calls, fetch };
}

const ok = (body = { applied: true }) => new Response(JSON.stringify(body), { status: 200 });

test('picked files go as multipart parts named "file", with the grant, next to the WebSocket', async () => {
  const { calls, fetch } = recorder(() => ok());
  let grant = 'g1';
  const http = tabHttp({ wsUrl: 'wss://gw.test/s/7/ws', grant: () => grant, fetch });
  const files = [new File(['AB'], 'a.txt', { type: 'text/plain' }), new File([new Uint8Array([1])], 'b.bin')];
  const res = await http.chooseFiles('f 1', 'c1', files);
  assert.deepEqual(res, { ok: true, status: 200, message: undefined });
  assert.equal(calls[0].url, 'https://gw.test/s/7/frames/f%201/file-chooser/c1');
  assert.equal(calls[0].method, 'POST');
  assert.deepEqual(calls[0].headers, { Authorization: 'Bearer g1' });
  const parts = calls[0].body.getAll('file');
  assert.deepEqual(parts.map((p) => p.name), ['a.txt', 'b.bin']);
  assert.equal(await parts[0].text(), 'AB');
  // the grant is read for each call (a fresh token after a reconnect)
  grant = 'g2';
  await http.cancelChooser('f 1', 'c1');
  assert.equal(calls[1].method, 'DELETE');
  assert.equal(calls[1].url, 'https://gw.test/s/7/frames/f%201/file-chooser/c1');
  assert.deepEqual(calls[1].headers, { Authorization: 'Bearer g2' });
});

test('a download comes back as a blob', async () => {
  const { calls, fetch } = recorder(() => new Response(new Uint8Array([7, 8, 9]), { status: 200 }));
  const http = tabHttp({ wsUrl: 'ws://127.0.0.1:7682/ws', grant: () => 'g', fetch });
  const res = await http.fetchDownload('f1', 'D1');
  assert.equal(calls[0].url, 'http://127.0.0.1:7682/frames/f1/downloads/D1');
  assert.equal(calls[0].method, undefined); // GET
  assert.deepEqual(calls[0].headers, { Authorization: 'Bearer g' });
  assert.equal(res.ok, true);
  assert.deepEqual([...new Uint8Array(await res.blob.arrayBuffer())], [7, 8, 9]);
});

test('refusals and network errors resolve with a message', async () => {
  const refuse = recorder(() => new Response(JSON.stringify({ error: 'superseded', message: 'a newer grant drives' }),
    { status: 409 }));
  let res = await tabHttp({ wsUrl: 'ws://h/ws', grant: () => 'g', fetch: refuse.fetch }).chooseFiles('f', 'c',
    [new File(['x'], 'x')]);
  assert.deepEqual(res, { ok: false, status: 409, message: 'superseded: a newer grant drives' });
  const notJson = recorder(() => new Response('too big', { status: 413 }));
  res = await tabHttp({ wsUrl: 'ws://h/ws', grant: () => 'g', fetch: notJson.fetch }).fetchDownload('f', 'D');
  assert.deepEqual(res, { ok: false, status: 413, message: 'HTTP 413' });
  const down = { fetch: async () => { throw new TypeError('Failed to fetch'); } };
  res = await tabHttp({ wsUrl: 'ws://h/ws', grant: () => 'g', fetch: down.fetch }).cancelChooser('f', 'c');
  assert.deepEqual(res, { ok: false, status: 0, message: 'network: Failed to fetch' });
});

test('dropped files go as multipart parts named "file" to the drop route, with the point and the grant', async () => {
  const { calls, fetch } = recorder(() => ok({ applied: true, files: ['a.txt'] }));
  const http = tabHttp({ wsUrl: 'ws://127.0.0.1:7682/ws', grant: () => 'g1', fetch });
  const res = await http.dropFiles('f1', 12.5, 300, [new File(['AB'], 'a.txt', { type: 'text/plain' })]);
  assert.deepEqual(res, { ok: true, status: 200, message: undefined });
  assert.equal(calls[0].url, 'http://127.0.0.1:7682/frames/f1/drop?x=12.5&y=300');
  assert.equal(calls[0].method, 'POST');
  assert.deepEqual(calls[0].headers, { Authorization: 'Bearer g1' });
  assert.deepEqual(calls[0].body.getAll('file').map((p) => p.name), ['a.txt']);
  const refused = tabHttp({ wsUrl: 'ws://h/ws', grant: () => 'g', fetch: async () => new Response(
    JSON.stringify({ error: 'superseded', message: 'a newer grant drives' }), { status: 409 }) });
  assert.deepEqual(await refused.dropFiles('f1', 1, 1, []), { ok: false, status: 409,
    message: 'superseded: a newer grant drives' });
});
