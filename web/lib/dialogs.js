// What a frame's page asks, shown over the frame's canvas: its JavaScript dialogs (alert, confirm, prompt,
// beforeunload) and its file choosers. A driver answers them here (OK/Cancel as `dialog-answer`; files picked
// with a real <input type=file> on this machine and uploaded); a view-only viewer sees dialogs without
// controls (file choosers are only told to drivers).

import { acceptAttribute, dialogAnswer, dialogButtons, pageLabel } from './tabstate.js';

const TITLES = {
  alert: 'The page says',
  confirm: 'The page asks',
  prompt: 'The page asks',
  beforeunload: 'Leave this page? Changes may not be saved.',
};

/**
 * @param {Document} doc
 * @param {object} o
 * @param {boolean} o.drive whether this viewer drives (controls shown)
 * @param {(type: string, fields: object) => number|null} o.step send one driver step; its seq, or null
 * @param {(chooserId: string, files: File[]) => Promise<{ok: boolean, message?: string}>} o.upload
 * @param {(chooserId: string) => Promise<{ok: boolean, message?: string}>} o.cancelChooser
 * @returns {{el: HTMLElement, render(tab): void, stepFailed(seq: number): void}}
 */
export function createDialogs(doc, { drive, step, upload, cancelChooser }) {
  const el = doc.createElement('div');
  el.className = 'fs-modal';
  el.hidden = true;
  if (drive) el.dataset.drive = '';
  let dialogBox = null; // the form showing the open dialog, dataset.id is its id
  let chooserBox = null;
  let pendingSeq = null; // the seq of the answer sent for dialogBox

  const make = (tag, cls, text) => {
    const n = doc.createElement(tag);
    n.className = cls;
    if (text !== undefined) n.textContent = text;
    return n;
  };
  const setBusy = (box, busy) => {
    for (const c of box.querySelectorAll('button, input')) c.disabled = busy;
    if (busy) box.dataset.pending = '';
    else delete box.dataset.pending;
  };

  const dialogOf = (dialog, tab) => {
    const box = make('form', 'fs-dialog');
    box.setAttribute('role', 'alertdialog');
    box.dataset.id = dialog.id;
    box.dataset.kind = dialog.kind;
    box.appendChild(make('div', 'fs-dialog-title', TITLES[dialog.kind] || 'The page asks'));
    const page = tab.pages.find((p) => p.id === dialog.page);
    if (page && !page.active) box.appendChild(make('div', 'fs-dialog-page', `on page: ${pageLabel(page)}`));
    box.appendChild(make('p', 'fs-dialog-message', dialog.message || ''));
    if (!drive) {
      box.appendChild(make('p', 'fs-dialog-note', 'Waiting for the driver to answer.'));
      return box;
    }
    let text = null;
    if (dialog.kind === 'prompt') {
      text = make('input', 'fs-dialog-text');
      text.type = 'text';
      text.value = dialog.default || '';
      text.setAttribute('aria-label', 'answer');
      box.appendChild(text);
    }
    const answer = (accept) => {
      setBusy(box, true);
      pendingSeq = step('dialog-answer', dialogAnswer(dialog, accept, text?.value));
      if (pendingSeq === null) setBusy(box, false); // not connected: nothing was sent
    };
    const buttons = make('div', 'fs-dialog-buttons');
    for (const [label, accept] of dialogButtons(dialog.kind)) {
      const b = make('button', accept ? 'fs-dialog-ok' : 'fs-dialog-cancel', label);
      b.type = accept ? 'submit' : 'button';
      if (!accept) b.addEventListener('click', () => answer(false));
      buttons.appendChild(b);
    }
    box.appendChild(buttons);
    box.addEventListener('submit', (e) => {
      e.preventDefault();
      answer(true);
    });
    box.addEventListener('keydown', (e) => {
      if (e.key !== 'Escape') return;
      e.preventDefault();
      answer(dialog.kind === 'alert');
    });
    return box;
  };

  const chooserOf = (chooser) => {
    const box = make('form', 'fs-dialog fs-chooser');
    box.setAttribute('role', 'dialog');
    box.dataset.id = chooser.id;
    const asks = chooser.multiple ? 'The page asks for files' : 'The page asks for a file';
    box.appendChild(make('div', 'fs-dialog-title', asks));
    const accept = acceptAttribute(chooser.accept);
    if (accept) box.appendChild(make('p', 'fs-chooser-accept', `Accepted: ${accept.split(',').join(', ')}`));
    const input = make('input', 'fs-file-input');
    input.type = 'file';
    input.multiple = Boolean(chooser.multiple);
    if (accept) input.accept = accept;
    input.setAttribute('aria-label', chooser.multiple ? 'files for the page' : 'a file for the page');
    box.appendChild(input);
    const buttons = make('div', 'fs-dialog-buttons');
    const cancel = make('button', 'fs-chooser-cancel', 'Cancel');
    cancel.type = 'button';
    buttons.appendChild(cancel);
    box.appendChild(buttons);
    const status = make('p', 'fs-chooser-status');
    box.appendChild(status);
    const settle = async (what, doing) => {
      setBusy(box, true);
      status.textContent = doing;
      let res;
      try {
        res = await what();
      } catch (err) {
        res = { ok: false, message: String(err) };
      }
      // Done: the service closes the chooser (file-chooser-closed removes this box). Refused: try again.
      if (res.ok) return;
      status.textContent = res.message || 'refused';
      setBusy(box, false);
    };
    input.addEventListener('change', () => {
      const files = [...input.files];
      if (!files.length) return;
      const n = files.length;
      settle(() => upload(chooser.id, files), `Sending ${n === 1 ? files[0].name : `${n} files`}…`);
    });
    cancel.addEventListener('click', () => settle(() => cancelChooser(chooser.id), 'Cancelling…'));
    box.addEventListener('submit', (e) => e.preventDefault());
    return box;
  };

  const focusFirst = (box) => {
    const target = box.querySelector('.fs-dialog-text') || box.querySelector('.fs-dialog-ok, .fs-file-input');
    target?.focus({ preventScroll: true });
    if (target?.select) target.select();
  };

  return {
    el,
    render(tab) {
      const dialog = tab.dialog;
      if (dialogBox && dialogBox.dataset.id !== dialog?.id) {
        dialogBox.remove();
        dialogBox = null;
        pendingSeq = null;
      }
      let opened = null;
      if (dialog && !dialogBox) {
        dialogBox = dialogOf(dialog, tab);
        el.prepend(dialogBox);
        opened = dialogBox;
      }
      const chooser = drive ? tab.chooser : null;
      if (chooserBox && chooserBox.dataset.id !== chooser?.id) {
        chooserBox.remove();
        chooserBox = null;
      }
      if (chooser && !chooserBox) {
        chooserBox = chooserOf(chooser);
        el.appendChild(chooserBox);
      }
      el.hidden = !dialogBox && !chooserBox;
      if (opened && drive) focusFirst(opened); // once shown: a hidden element cannot take focus
    },
    /** A step was refused: if it was this dialog's answer, the driver may answer again. */
    stepFailed(seq) {
      if (dialogBox && seq === pendingSeq) {
        pendingSeq = null;
        setBusy(dialogBox, false);
      }
    },
  };
}
