// A frame view's tab UI: the pages and navigation bar above the canvas (tabbar.js), dialogs and file choosers
// over it (dialogs.js), downloads and copied text below it (transfers.js), and files dragged from the desktop
// onto the canvas dropped on the page (drops.js). It draws the tab state the client keeps for the frame
// (tabstate.js, updated by the router before listeners hear a message) and sends the driver's steps through the
// client, with its grant and seq as `input` has them.

import { createTabBar } from './tabbar.js';
import { ensureStyle } from './style.js';
import { createDialogs } from './dialogs.js';
import { createTransfers } from './transfers.js';
import { attachDrops } from './drops.js';
import { tabHttp } from './tabhttp.js';
import { TabState, TAB_MESSAGES } from './tabstate.js';
import { canDrive } from './token.js';
import { frameCssSize } from './view.js';

const STYLE_ID = 'fs-tab-style';
const CSS = `
.fs-tabbar{display:flex;flex-direction:column;gap:3px;font:13px/1.4 system-ui,sans-serif;color:#ddd}
.fs-tabs{display:flex;flex-wrap:wrap;gap:2px}
.fs-tabbar[data-pages="0"] .fs-tabs{display:none}
.fs-tab{display:inline-flex;align-items:center;gap:2px;max-width:24ch;background:#2b2f36;border-radius:4px 4px 0 0;
  padding:0 4px;border-bottom:2px solid transparent}
.fs-tab[data-active]{background:#3a404a;border-bottom-color:#2456a6}
.fs-tab[data-unresponsive]{border-bottom-color:#a65b24}
.fs-tab-label{overflow:hidden;text-overflow:ellipsis;white-space:nowrap;font:inherit;color:inherit;background:none;
  border:0;padding:1px 2px;cursor:default}
button.fs-tab-label{cursor:pointer}
.fs-tab-hung{font-size:11px;color:#fb8;white-space:nowrap}
.fs-tab-reload,.fs-tab-close{font:inherit;font-size:12px;line-height:1;background:none;border:0;color:#aaa;
  cursor:pointer;padding:1px 3px}
.fs-tab-reload:hover,.fs-tab-close:hover{color:#fff}
.fs-nav{display:flex;gap:4px;align-items:center}
.fs-nav button{font:inherit;padding:0 6px;cursor:pointer}
.fs-address{flex:1;min-width:12ch;font:inherit}
.fs-modal{position:absolute;inset:0;display:flex;flex-direction:column;align-items:center;justify-content:center;
  gap:8px;background:rgba(0,0,0,.35);line-height:1.4;pointer-events:none}
.fs-modal[data-drive]{pointer-events:auto}
.fs-modal[hidden]{display:none}
.fs-dialog{min-width:16em;max-width:min(30em,90%);max-height:80%;overflow:auto;background:#f4f4f4;color:#111;
  font:14px/1.4 system-ui,sans-serif;border-radius:6px;padding:10px 14px;box-shadow:0 4px 24px rgba(0,0,0,.5)}
.fs-dialog-title{font-weight:600;margin-bottom:4px}
.fs-dialog-page{font-size:12px;color:#555}
.fs-dialog-message{white-space:pre-wrap;word-break:break-word;margin:4px 0 8px}
.fs-dialog-text{width:100%;box-sizing:border-box;font:inherit;margin-bottom:8px}
.fs-dialog-buttons{display:flex;justify-content:flex-end;gap:6px}
.fs-dialog-buttons button{font:inherit;min-width:5em}
.fs-dialog-note{font-size:12px;color:#555;margin:0}
.fs-chooser-accept{font-size:12px;color:#555;margin:0 0 6px}
.fs-file-input{display:block;margin-bottom:8px;font:inherit}
.fs-chooser-status{font-size:12px;color:#7a2626;margin:4px 0 0}
.fs-chooser-status:empty{display:none}
.fs-transfers{display:flex;flex-direction:column;gap:3px;font:13px/1.4 system-ui,sans-serif;color:#ddd}
.fs-downloads{list-style:none;margin:0;padding:0;display:flex;flex-direction:column;gap:2px}
.fs-downloads[hidden],.fs-clipboard[hidden],.fs-transfers [hidden]{display:none}
.fs-download{display:flex;gap:6px;align-items:center}
.fs-download-size,.fs-download-state,.fs-download-note{color:#9ab;font-size:12px}
.fs-download[data-state=failed] .fs-download-state{color:#f99}
.fs-download-link{color:#8bf;font-size:12px}
.fs-clipboard{display:flex;flex-wrap:wrap;gap:6px;align-items:center;background:#25282e;border-radius:4px;
  padding:2px 6px}
.fs-clipboard-preview{color:#9ab;overflow:hidden;text-overflow:ellipsis;white-space:nowrap;max-width:40ch}
.fs-clipboard-text{flex-basis:100%;font:12px/1.4 ui-monospace,monospace}
`;

/**
 * Add the tab UI to a view made by mountFrame().
 * @param {import('./client.js').FramestreamClient} client
 * @param {{el: HTMLElement, frameId: string, canvas?: HTMLCanvasElement, toast?: (text: string) => void}} view
 * @param {{drive?: boolean}} [opts] controls for a driver (default: the token's role may drive)
 * @returns {{tabbar, dialogs, transfers, destroy(): void}}
 */
export function mountTabUi(client, view, { drive = canDrive(client.role) } = {}) {
  const { frameId } = view;
  const doc = view.el.ownerDocument;
  ensureStyle(doc, STYLE_ID, CSS);
  const stage = view.el.querySelector('.fs-stage');
  const toast = (text) => view.toast?.(text);
  const http = tabHttp({ wsUrl: client.url, grant: () => client.token });

  const step = (type, fields) => {
    const seq = client.sendStep(frameId, type, fields);
    if (seq === null) toast('Not connected: try again when the frame is back');
    return seq;
  };
  const tabbar = createTabBar(doc, { drive, step });
  const dialogs = createDialogs(doc, {
    drive,
    step,
    upload: (chooser, files) => http.chooseFiles(frameId, chooser, files),
    cancelChooser: (chooser) => http.cancelChooser(frameId, chooser),
  });
  const transfers = createTransfers(doc, { fetchDownload: (id) => http.fetchDownload(frameId, id) });
  const canvas = view.canvas || stage?.querySelector('canvas');
  // A viewer that only watches takes the drop too, so its browser does not open the file in place of the view.
  const drops = canvas ? attachDrops(canvas, {
    frameSize: () => frameCssSize(client, frameId),
    drop: async (x, y, files) => (drive ? http.dropFiles(frameId, x, y, files)
      : { ok: false, message: 'only the driver can drop files on the page' }),
    toast,
  }) : null;
  view.el.insertBefore(tabbar.el, stage);
  stage.appendChild(dialogs.el);
  view.el.appendChild(transfers.el);

  const empty = new TabState();
  const render = () => {
    const tab = client.tab(frameId) || empty;
    tabbar.render(tab);
    dialogs.render(tab);
    transfers.render(tab);
  };
  render();

  const offs = [];
  const mine = (type, fn) => offs.push(client.on(type, (d) => {
    if (d.frame === frameId) fn(d);
  }));
  for (const type of ['frame-state', ...TAB_MESSAGES]) mine(type, render);
  mine('clipboard', (d) => transfers.copied(d.text ?? ''));
  mine('error', (d) => {
    if (d.seq !== undefined) dialogs.stepFailed(d.seq);
  });
  offs.push(client.on('close', render)); // the connection's dialogs are gone; watching again tells them anew

  return {
    tabbar,
    dialogs,
    transfers,
    destroy() {
      for (const off of offs) off();
      drops?.detach();
      transfers.destroy();
      for (const part of [tabbar, dialogs, transfers]) part.el.remove();
    },
  };
}
