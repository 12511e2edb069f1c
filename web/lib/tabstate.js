// What a watched frame's browser shows and asks, kept from the service's messages (docs/protocol.md, "A frame
// is a whole browser tab"): its pages and URL (frame-state), open dialogs and file choosers, downloads and the
// text a page copied. The views (tabbar.js, dialogs.js, transfers.js) draw it. Pure: no DOM.

/** Message types that only carry tab state (frame-state also does, besides the frame's state). */
export const TAB_MESSAGES = new Set(['dialog', 'dialog-closed', 'file-chooser', 'file-chooser-closed', 'download',
  'clipboard']);

export class TabState {
  constructor() {
    this.pages = []; // frame-state `pages`: [{id, url, title, active, responsive}]
    this.url = '';
    this.dialogs = new Map(); // id -> dialog message, in the order they opened
    this.choosers = new Map(); // id -> file-chooser message
    this.downloads = new Map(); // id -> last download message, in the order they started
    this.clipboard = null; // {text, count}: the last copied text, count goes up with each copy
  }

  /**
   * Take one message of this frame.
   * @returns {boolean} whether it was about the tab (so views should draw again)
   */
  apply(msg) {
    switch (msg.type) {
      case 'frame-state':
        // No `pages` while no browser runs (launching, closed, error): nothing to show then.
        this.pages = Array.isArray(msg.pages) ? msg.pages : [];
        this.url = msg.url || '';
        return true;
      case 'dialog':
        this.dialogs.set(msg.id, msg);
        return true;
      case 'dialog-closed':
        return this.dialogs.delete(msg.id);
      case 'file-chooser':
        this.choosers.set(msg.id, msg);
        return true;
      case 'file-chooser-closed':
        return this.choosers.delete(msg.id);
      case 'download':
        this.downloads.set(msg.id, { ...this.downloads.get(msg.id), ...msg });
        return true;
      case 'clipboard':
        this.clipboard = { text: String(msg.text ?? ''), count: (this.clipboard?.count ?? 0) + 1 };
        return true;
      default:
        return false;
    }
  }

  /** The connection is gone: open dialogs and file choosers are told again when the frame is watched again;
   * downloads are not, so the list stays. */
  connectionLost() {
    this.dialogs.clear();
    this.choosers.clear();
  }

  /** The dialog to show (the oldest still open), or null. */
  get dialog() {
    return this.dialogs.values().next().value ?? null;
  }

  /** The file chooser to show (the oldest still open), or null. */
  get chooser() {
    return this.choosers.values().next().value ?? null;
  }

  get activePage() {
    return this.pages.find((p) => p.active) ?? null;
  }

  /** A plain copy (for info() and tests). */
  info() {
    return {
      pages: this.pages, url: this.url, dialogs: [...this.dialogs.values()], choosers: [...this.choosers.values()],
      downloads: [...this.downloads.values()], clipboard: this.clipboard,
    };
  }
}

/** A tab's label: the page's title, else its URL, else "new page". */
export function pageLabel(page) {
  const title = typeof page?.title === 'string' ? page.title.trim() : '';
  if (title) return title;
  return page?.url || 'new page';
}

/** The `accept` attribute of an `<input type=file>` for a file chooser's `accept` list (empty: any file). */
export function acceptAttribute(accept) {
  return Array.isArray(accept) ? accept.filter((a) => typeof a === 'string' && a).join(',') : '';
}

const SCHEME = /^[a-z][a-z0-9+.-]*:/i;
const HOST_WITH_PORT = /^[^/:?#\s]+:\d+(?:[/?#]|$)/;

/** What the address field's text means as a URL: `example.org/x` is `https://example.org/x`, `host:8080/` is
 * `http://host:8080/`; anything with a scheme is kept for the service to accept or refuse. */
export function addressToUrl(text) {
  const t = String(text ?? '').trim();
  if (!t) return null;
  if (HOST_WITH_PORT.test(t)) return `http://${t}`;
  if (SCHEME.test(t)) return t;
  return `https://${t.replace(/^\/+/, '')}`;
}

/** The fields of a `dialog-answer` (besides the envelope): OK or Cancel, and the text of a prompt's OK. */
export function dialogAnswer(dialog, accept, text) {
  const fields = { id: dialog.id, accept: Boolean(accept) };
  if (accept && dialog.kind === 'prompt') fields.text = String(text ?? '');
  return fields;
}

/** The buttons a dialog offers its driver: [label, accept] pairs; an alert has only OK. */
export function dialogButtons(kind) {
  if (kind === 'alert') return [['OK', true]];
  if (kind === 'beforeunload') return [['Leave', true], ['Stay', false]];
  return [['OK', true], ['Cancel', false]];
}

/** Bytes for people: 512 B, 1.5 KB, 12 MB. */
export function formatBytes(n) {
  if (!Number.isFinite(n) || n < 0) return '';
  if (n < 1024) return `${n} B`;
  const units = ['KB', 'MB', 'GB'];
  let v = n / 1024;
  let i = 0;
  while (v >= 1024 && i < units.length - 1) {
    v /= 1024;
    i += 1;
  }
  return `${v < 10 ? v.toFixed(1) : Math.round(v)} ${units[i]}`;
}

/** The service's HTTP URL for `path` (no leading slash), next to its WebSocket URL: works behind a path prefix
 * (`wss://gw/sandboxes/7/ws` -> `https://gw/sandboxes/7/frames/...`). */
export function httpUrl(wsUrl, path) {
  const url = new URL(path, wsUrl);
  url.protocol = url.protocol === 'wss:' ? 'https:' : url.protocol === 'ws:' ? 'http:' : url.protocol;
  return url.href;
}
