// A frame view's handoff UI (docs/protocol.md, "Handing over"): in the bar, the driver's kind and Take over /
// Hand back with a note; above the picture, the agent's request for help with its own Take over; over the canvas,
// a marker where the agent's last step acted. The marker is an element over the canvas, never drawn into it, so
// the picture stays the page's own. It draws the client's HandoffState for the frame (handoff.js) and sends the
// person's steps through the client; mountFrame (view.js) mounts it and hands it the answers to its steps.

import { controlView, helpView, pointerSpot, refusalText } from './handoff.js';
import { canvasPlacement } from './input.js';
import { ensureStyle } from './style.js';

export const POINTER_SHOW_MS = 2000; // the marker stays this long, then fades out over POINTER_FADE_MS
export const POINTER_FADE_MS = 600;
const ENDED_SHOW_MS = 6000; // how long the banner says how a request for help ended

const STYLE_ID = 'fs-handoff-style';
const CSS = `
/* A row of its own, always there and one height, whoever drives: the picture never moves under the pointer when
   Take over or Hand back appears (a click that made us the driver shifted the canvas, and the next click missed). */
.fs-handoff{display:flex;flex:1 0 100%;flex-wrap:nowrap;align-items:center;gap:6px;height:24px;overflow:hidden;
  white-space:nowrap}
.fs-handoff button,.fs-note{height:22px;box-sizing:border-box}
.fs-handoff [hidden]{display:none}
.fs-kind[data-kind=agent]{background:#5b3da6}
.fs-kind[data-kind=person]{background:#2456a6}
.fs-handoff button,.fs-help button{font:inherit;font-size:12px;padding:0 8px;cursor:pointer}
.fs-hand-back{display:inline-flex;gap:4px;margin:0;min-width:0}
.fs-note{font:inherit;font-size:12px;width:22ch;min-width:8ch;flex:0 1 auto}
.fs-handoff-status{font-size:12px;color:#9ab;overflow:hidden;text-overflow:ellipsis}
.fs-handoff-status[data-tone=error]{color:#fb8}
.fs-handoff-status:empty{display:none}
.fs-help{display:flex;flex-wrap:wrap;align-items:center;gap:8px;padding:4px 8px;border-radius:4px;
  background:#6b4a12;color:#fff;font:13px/1.4 system-ui,sans-serif}
.fs-help[data-open=false]{background:#33404f}
.fs-help[hidden]{display:none}
.fs-help-reason{font-weight:600}
.fs-help-note{font-size:12px;color:#fde7b0}
.fs-help-note:empty{display:none}
.fs-pointer{position:absolute;width:26px;height:26px;margin:-13px 0 0 -13px;box-sizing:border-box;border-radius:50%;
  border:3px solid #ffd400;box-shadow:0 0 0 2px rgba(0,0,0,.55);pointer-events:none;opacity:1;
  transition:opacity ${POINTER_FADE_MS}ms linear}
.fs-pointer::after{content:"";position:absolute;left:50%;top:50%;width:8px;height:8px;margin:-4px 0 0 -4px;
  border-radius:50%;background:#ffd400}
.fs-pointer[data-action=click]{animation:fs-pointer-click .35s ease-out}
.fs-pointer[data-fading]{opacity:0}
.fs-pointer[hidden]{display:none}
.fs-pointer-label{position:absolute;left:28px;top:0;white-space:nowrap;line-height:1.3;font:11px system-ui,sans-serif;
  color:#fff;background:rgba(0,0,0,.7);padding:0 4px;border-radius:3px}
@keyframes fs-pointer-click{from{transform:scale(1.8)}to{transform:scale(1)}}
`;

function html(doc, markup) {
  const t = doc.createElement('template');
  t.innerHTML = markup.trim();
  return t.content.firstElementChild;
}

/**
 * Add the handoff UI to a frame view.
 * @param {import('./client.js').FramestreamClient} client
 * @param {{el: HTMLElement, canvas: HTMLCanvasElement, frameId: string, input?: {focus(): void}|null}} view
 * @param {{drive: boolean}} o drive: the token may drive (view-only viewers get no buttons)
 * @returns {{answer(msg: object): boolean, quiet(): boolean, render(): void, destroy(): void}} `answer`: an
 *   input-ack or error for one of its steps (true: it was, and is shown here); `quiet`: pointer moves would only
 *   be refused or grab the frame back (the agent drives, or we handed back and do not drive)
 */
export function mountHandoff(client, view, { drive }) {
  const { frameId, canvas } = view;
  const doc = view.el.ownerDocument;
  ensureStyle(doc, STYLE_ID, CSS);
  const bar = view.el.querySelector('.fs-bar');
  const stage = view.el.querySelector('.fs-stage');

  const controls = html(doc, `
    <span class="fs-handoff">
      <span class="fs-badge fs-kind" hidden></span>
      <button type="button" class="fs-take-over" hidden>Take over</button>
      <form class="fs-hand-back" hidden>
        <input class="fs-note" type="text" maxlength="2000" placeholder="note for the agent (optional)"
          aria-label="note for the agent">
        <button type="submit" class="fs-hand-back-button">Hand back</button>
      </form>
      <span class="fs-handoff-status" role="status"></span>
    </span>`);
  const banner = html(doc, `
    <div class="fs-help" role="alert" hidden>
      <span class="fs-help-text"><span class="fs-help-subject"></span> asks for help:
        <span class="fs-help-reason"></span></span>
      <span class="fs-help-note"></span>
      <button type="button" class="fs-help-take-over" hidden>Take over</button>
    </div>`);
  const pointer = html(doc, `
    <div class="fs-pointer" aria-hidden="true" hidden><span class="fs-pointer-label"></span></div>`);
  bar.insertBefore(controls, bar.querySelector('.fs-viewers'));
  view.el.insertBefore(banner, stage);
  stage.insertBefore(pointer, canvas.nextSibling);

  const $ = (root, sel) => root.querySelector(sel);
  const kindBadge = $(controls, '.fs-kind');
  const takeOverButtons = [$(controls, '.fs-take-over'), $(banner, '.fs-help-take-over')];
  const form = $(controls, '.fs-hand-back');
  const note = $(controls, '.fs-note');
  const status = $(controls, '.fs-handoff-status');

  const steps = new Map(); // seq -> 'take-over' | 'release', until answered
  let handedBack = false; // we released and have not driven since
  let showEnded = false; // the banner still says how the last request ended
  let endedTimer = null;
  let busy = false; // a take-over or release is on its way

  const say = (text, tone = 'error') => {
    status.textContent = text;
    status.dataset.tone = tone;
  };
  const state = () => client.handoff(frameId);

  const render = () => {
    const h = state();
    const connected = client.state === 'open';
    const empty = { control: null, help: null, ended: null, youDrive: false };
    const c = controlView(h || empty, { canDrive: drive, connected });
    kindBadge.hidden = !c.kind;
    kindBadge.dataset.kind = c.kind || '';
    kindBadge.textContent = c.label;
    const since = h?.control?.sinceUs;
    kindBadge.title = since ? `since ${new Date(since / 1000).toLocaleTimeString()}` : '';
    takeOverButtons[0].hidden = !c.takeOver;
    form.hidden = !c.handBack;
    for (const b of takeOverButtons) b.disabled = busy;
    form.querySelector('button').disabled = busy;

    const help = helpView(h || empty, { canDrive: drive, connected });
    banner.hidden = !help || (!help.open && !showEnded);
    if (help) {
      banner.dataset.open = String(help.open);
      $(banner, '.fs-help-text').hidden = !help.open;
      $(banner, '.fs-help-subject').textContent = help.subject;
      $(banner, '.fs-help-reason').textContent = help.reason;
      $(banner, '.fs-help-note').textContent = help.open ? help.note : help.text;
      takeOverButtons[1].hidden = !help.takeOver;
    }
  };

  const takeOver = async () => {
    say('');
    busy = true;
    render();
    const seq = await client.takeOver(frameId);
    if (seq === null) {
      busy = false;
      say('Not connected: try again when the frame is back');
      render();
      return;
    }
    steps.set(seq, 'take-over');
  };
  for (const b of takeOverButtons) b.addEventListener('click', () => { takeOver(); });
  form.addEventListener('submit', (e) => {
    e.preventDefault();
    say('');
    const seq = client.release(frameId, note.value.trim());
    if (seq === null) {
      say('Not connected: try again when the frame is back');
      return;
    }
    steps.set(seq, 'release');
    busy = true;
    render();
  });

  // The agent's last pointer: placed through the canvas's picture box now, shown a moment, then faded out.
  let pointerTimers = [];
  const showPointer = (p) => {
    const cfg = client.info(frameId)?.config;
    if (!cfg) return;
    const origin = stage.getBoundingClientRect();
    const spot = pointerSpot(p, canvasPlacement(canvas), { width: cfg.css_width, height: cfg.css_height },
      { left: origin.left + stage.clientLeft, top: origin.top + stage.clientTop });
    for (const t of pointerTimers) clearTimeout(t);
    Object.assign(pointer.style, { left: `${spot.left}px`, top: `${spot.top}px` });
    Object.assign(pointer.dataset, { action: p.action, x: String(p.x), y: String(p.y) });
    delete pointer.dataset.fading;
    pointer.getAnimations?.().forEach((a) => { a.cancel(); a.play(); }); // each click pulses again
    $(pointer, '.fs-pointer-label').textContent = `${p.subject} · ${p.action}`;
    pointer.hidden = !spot.inside;
    pointerTimers = [
      setTimeout(() => { pointer.dataset.fading = ''; }, POINTER_SHOW_MS),
      setTimeout(() => { pointer.hidden = true; }, POINTER_SHOW_MS + POINTER_FADE_MS),
    ];
  };

  const offs = [];
  const mine = (type, fn) => offs.push(client.on(type, (d) => {
    if (d.frame === frameId) fn(d);
  }));
  mine('control', (d) => {
    if (d.you && d.driver !== null) handedBack = false;
    render();
  });
  mine('help-requested', () => {
    showEnded = false;
    render();
  });
  mine('help-ended', () => {
    showEnded = true;
    clearTimeout(endedTimer);
    endedTimer = setTimeout(() => {
      showEnded = false;
      render();
    }, ENDED_SHOW_MS);
    render();
  });
  mine('agent-pointer', showPointer);
  offs.push(client.on('open', render));
  offs.push(client.on('close', () => {
    steps.clear();
    busy = false;
    render();
  }));
  render();

  return {
    answer(msg) {
      const step = steps.get(msg.seq);
      if (msg.frame !== frameId || step === undefined) return false;
      steps.delete(msg.seq);
      busy = false;
      if (msg.type === 'error') {
        say(refusalText(step, msg.code, msg.message));
      } else if (step === 'release') {
        handedBack = true;
        note.value = '';
        say('Handed back', 'info');
      } else {
        view.input?.focus(); // the person took over to act: the keyboard goes to the frame
      }
      render();
      return true;
    },
    quiet() {
      const h = state();
      return !h?.youDrive && (h?.control?.kind === 'agent' || handedBack);
    },
    render,
    destroy() {
      for (const off of offs) off();
      for (const t of pointerTimers) clearTimeout(t);
      clearTimeout(endedTimer);
      for (const el of [controls, banner, pointer]) el.remove();
    },
  };
}
