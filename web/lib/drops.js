// Files dragged from this machine's desktop onto a viewer's canvas: handed to `drop` with the frame's point under
// them (the tab UI drops a driver's on the page there, docs/protocol.md "Dropped files", and tells a viewer that
// only watches that it cannot). Only a drag that carries files is taken, and then always: the viewer's browser
// would open the file in place of the view. The canvas is marked (`data-dropping`) while one is over it.

import { canvasPlacement } from './input.js';
import { mapToFrame } from './coords.js';

/** Whether a drag carries files from the desktop (not text or a link dragged within a page). */
export function carriesFiles(dataTransfer) {
  return Boolean(dataTransfer) && Array.from(dataTransfer.types || []).includes('Files');
}

/**
 * @param {HTMLCanvasElement} canvas
 * @param {object} o
 * @param {() => ({width:number, height:number}|null)} o.frameSize the frame's CSS size (null: not known yet)
 * @param {(x: number, y: number, files: File[]) => Promise<{ok: boolean, message?: string}>} o.drop
 * @param {(text: string) => void} [o.toast] says why a drop did not go
 * @returns {{detach(): void}}
 */
export function attachDrops(canvas, { frameSize, drop, toast = () => {} }) {
  const listeners = [];
  const on = (type, fn) => {
    canvas.addEventListener(type, fn);
    listeners.push(() => canvas.removeEventListener(type, fn));
  };
  const over = (e) => {
    if (!carriesFiles(e.dataTransfer)) return;
    e.preventDefault(); // taken here: the viewer's browser does not open the file in place of the viewer
    e.dataTransfer.dropEffect = 'copy';
    canvas.dataset.dropping = '';
  };
  on('dragenter', over);
  on('dragover', over);
  on('dragleave', () => { delete canvas.dataset.dropping; });
  on('drop', async (e) => {
    if (!carriesFiles(e.dataTransfer)) return;
    e.preventDefault();
    delete canvas.dataset.dropping;
    const files = Array.from(e.dataTransfer.files || []);
    const size = frameSize();
    if (!files.length || !size) return;
    const { box, fit } = canvasPlacement(canvas);
    const p = mapToFrame(e.clientX, e.clientY, box, size.width, size.height, fit);
    if (!p.inside) return; // beside the picture (letterboxed): nothing of the page is there
    const result = await drop(p.x, p.y, files);
    if (!result.ok) toast(`The files were not dropped: ${result.message || 'refused'}`);
  });
  return {
    detach() {
      for (const off of listeners.splice(0)) off();
      delete canvas.dataset.dropping;
    },
  };
}
