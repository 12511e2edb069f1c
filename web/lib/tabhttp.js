// The HTTP half of driving a frame's tab (docs/protocol.md): a file chooser's answer (the files, multipart,
// parts named "file") or its cancel, files dropped on the page, and fetching a finished download. Each carries
// the drive grant as a Bearer token; URLs are next to the client's WebSocket, so a viewer behind a path prefix
// reaches them. Every call resolves to {ok, status, message?} (and `blob` for a download); none throws on a refusal.

import { httpUrl } from './tabstate.js';

const enc = encodeURIComponent;

/** The service's refusal as one line: `forbidden: this token may not drive this frame`, or the HTTP status. */
async function refusal(res) {
  let body = null;
  try {
    body = await res.json();
  } catch {
    body = null;
  }
  const code = body?.error || `HTTP ${res.status}`;
  return body?.message ? `${code}: ${body.message}` : code;
}

async function call(fetchFn, url, init) {
  let res;
  try {
    res = await fetchFn(url, { cache: 'no-store', ...init });
  } catch (err) {
    return { ok: false, status: 0, message: `network: ${err?.message || err}` };
  }
  if (!res.ok) return { ok: false, status: res.status, message: await refusal(res) };
  return { ok: true, status: res.status, res };
}

/**
 * @param {object} o
 * @param {string} o.wsUrl the client's WebSocket URL
 * @param {() => string|null} o.grant the drive grant (the client's token)
 * @param {typeof fetch} [o.fetch]
 */
export function tabHttp({ wsUrl, grant, fetch: fetchFn = globalThis.fetch.bind(globalThis) }) {
  const auth = () => ({ Authorization: `Bearer ${grant()}` });
  const chooserUrl = (frame, chooser) => httpUrl(wsUrl, `frames/${enc(frame)}/file-chooser/${enc(chooser)}`);
  return {
    /** Answer a file chooser with these files (File or Blob objects). */
    async chooseFiles(frame, chooser, files) {
      const form = new FormData();
      for (const file of files) form.append('file', file, file.name || 'file');
      const r = await call(fetchFn, chooserUrl(frame, chooser), { method: 'POST', body: form, headers: auth() });
      return { ok: r.ok, status: r.status, message: r.message };
    },
    /** Drop these files (File objects) on the frame's active page at (x, y), its CSS pixels, as from a desktop. */
    async dropFiles(frame, x, y, files) {
      const form = new FormData();
      for (const file of files) form.append('file', file, file.name || 'file');
      const url = httpUrl(wsUrl, `frames/${enc(frame)}/drop?x=${enc(x)}&y=${enc(y)}`);
      const r = await call(fetchFn, url, { method: 'POST', body: form, headers: auth() });
      return { ok: r.ok, status: r.status, message: r.message };
    },
    /** The driver cancels a file chooser (the page gets no file). */
    async cancelChooser(frame, chooser) {
      const r = await call(fetchFn, chooserUrl(frame, chooser), { method: 'DELETE', headers: auth() });
      return { ok: r.ok, status: r.status, message: r.message };
    },
    /** A finished download's bytes. */
    async fetchDownload(frame, download) {
      const url = httpUrl(wsUrl, `frames/${enc(frame)}/downloads/${enc(download)}`);
      const r = await call(fetchFn, url, { headers: auth() });
      if (!r.ok) return { ok: false, status: r.status, message: r.message };
      return { ok: true, status: r.status, blob: await r.res.blob() };
    },
  };
}
