// What comes out of a frame for its driver: downloads (listed as the service tells them; a finished one is
// fetched with the drive grant and offered as a file through <a download>) and text a page copied (written to
// this machine's clipboard where the browser allows it, shown to copy by hand otherwise). Both are only told to
// drivers, so a view-only viewer sees nothing here.

import { clipboardPreview } from './clipboard.js';
import { formatBytes } from './tabstate.js';

/**
 * @param {Document} doc
 * @param {object} o
 * @param {(downloadId: string) => Promise<{ok: boolean, blob?: Blob, message?: string}>} o.fetchDownload
 * @returns {{el: HTMLElement, render(tab): void, copied(text: string): Promise<boolean>, destroy(): void}}
 */
export function createTransfers(doc, { fetchDownload }) {
  const win = doc.defaultView;
  const el = doc.createElement('div');
  el.className = 'fs-transfers';
  const list = doc.createElement('ul');
  list.className = 'fs-downloads';
  list.hidden = true;
  const clip = doc.createElement('div');
  clip.className = 'fs-clipboard';
  clip.hidden = true;
  clip.innerHTML = `
    <span class="fs-clipboard-what"></span>
    <span class="fs-clipboard-preview"></span>
    <textarea class="fs-clipboard-text" readonly rows="3" aria-label="text copied from the frame"></textarea>
    <button type="button" class="fs-clipboard-copy">copy</button>
    <button type="button" class="fs-clipboard-dismiss" aria-label="dismiss">×</button>`;
  el.append(list, clip);
  const rows = new Map(); // download id -> <li>
  const objectUrls = [];

  const save = async (row, download) => {
    const button = row.querySelector('.fs-download-save');
    button.disabled = true;
    const note = row.querySelector('.fs-download-note');
    note.textContent = 'fetching…';
    let res;
    try {
      res = await fetchDownload(download.id);
    } catch (err) {
      res = { ok: false, message: String(err) };
    }
    button.disabled = false;
    if (!res.ok) {
      note.textContent = res.message || 'could not fetch it';
      return;
    }
    note.textContent = '';
    const url = URL.createObjectURL(res.blob);
    objectUrls.push(url);
    let link = row.querySelector('.fs-download-link');
    if (!link) {
      link = doc.createElement('a');
      link.className = 'fs-download-link';
      row.appendChild(link);
    }
    link.href = url;
    link.download = download.name || 'download';
    link.textContent = 'save again';
    link.dataset.bytes = String(res.blob.size);
    link.click(); // offers the file to the user, as a download link of this page would
  };

  const rowOf = (download) => {
    const row = doc.createElement('li');
    row.className = 'fs-download';
    row.dataset.id = download.id;
    row.innerHTML = `<span class="fs-download-name"></span> <span class="fs-download-size"></span>
      <span class="fs-download-state"></span> <button type="button" class="fs-download-save" hidden>save</button>
      <span class="fs-download-note"></span>`;
    row.querySelector('.fs-download-save').addEventListener('click', () => save(row, rows.get(download.id).info));
    return row;
  };

  const showCopied = (text, written) => {
    clip.hidden = false;
    clip.dataset.copied = written ? 'yes' : 'no';
    clip.querySelector('.fs-clipboard-what').textContent = written
      ? 'Copied from the frame to your clipboard:' : 'Copied from the frame:';
    clip.querySelector('.fs-clipboard-preview').textContent = clipboardPreview(text);
    const area = clip.querySelector('.fs-clipboard-text');
    area.value = text;
    area.hidden = written;
    clip.querySelector('.fs-clipboard-copy').hidden = written;
  };
  const write = async (text) => {
    try {
      await win.navigator.clipboard.writeText(text);
      return true;
    } catch {
      return false; // no clipboard API, not focused, or not allowed: the user copies it from the box
    }
  };
  clip.querySelector('.fs-clipboard-copy').addEventListener('click', async () => {
    const area = clip.querySelector('.fs-clipboard-text');
    if (await write(area.value)) {
      showCopied(area.value, true);
      return;
    }
    area.hidden = false;
    area.select();
    doc.execCommand('copy'); // older browsers, and http pages off localhost
  });
  clip.querySelector('.fs-clipboard-dismiss').addEventListener('click', () => { clip.hidden = true; });

  return {
    el,
    render(tab) {
      for (const download of tab.downloads.values()) {
        let entry = rows.get(download.id);
        if (!entry) {
          entry = { row: rowOf(download), info: download };
          rows.set(download.id, entry);
          list.prepend(entry.row); // newest first
        }
        entry.info = download;
        const { row } = entry;
        row.dataset.state = download.state;
        row.querySelector('.fs-download-name').textContent = download.name || download.id;
        row.querySelector('.fs-download-size').textContent = formatBytes(download.size);
        row.querySelector('.fs-download-state').textContent = download.state === 'done' ? '' : download.state;
        row.querySelector('.fs-download-save').hidden = download.state !== 'done';
      }
      list.hidden = rows.size === 0;
    },
    /** A page copied `text`: put it in this machine's clipboard if the person just acted here (their own
     *  click or key: a page cannot fill their clipboard behind their back) and the browser lets us; show it. */
    async copied(text) {
      const activation = win.navigator.userActivation;
      const written = activation !== undefined && activation.isActive && await write(text);
      showCopied(text, written);
      return written;
    },
    destroy() {
      for (const url of objectUrls) URL.revokeObjectURL(url);
    },
  };
}
