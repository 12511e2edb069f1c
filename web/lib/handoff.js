// Handing a frame between a person and an agent (docs/protocol.md, "Handing over"), as the viewer sees it: who
// drives (`control`), the agent's open request for help (`help-requested` until `help-ended`) and where the agent's
// last step acted (`agent-pointer`), and the page's cursor at the driver's pointer (`cursor`, pagecursor.js). Pure:
// the router keeps one HandoffState per watched frame, handoffui.js draws what the functions below say.

import { frameToClient } from './coords.js';
import { pageCursor } from './pagecursor.js';

/** The service's messages a frame's HandoffState keeps. */
export const HANDOFF_MESSAGES = new Set(['control', 'help-requested', 'help-ended', 'agent-pointer', 'cursor']);

/** Frame states whose browser runs: any other (closed, error, a new browser launching) ends the page's cursor. */
const BROWSER_RUNS = new Set(['live', 'paused']);

/** One watched frame's handoff, from the service's messages. */
export class HandoffState {
  constructor() {
    /** @type {{driver: string|null, kind: 'agent'|'person'|null, held: boolean, you: boolean,
     *          sinceUs: number|null, note: string|null}|null} the last `control` (null before the first) */
    this.control = null;
    /** @type {{id: string, reason: string, subject: string, untilUs: number}|null} the open request */
    this.help = null;
    /** @type {{id: string, outcome: string, note: string|null, by: string|null}|null} how the last one ended */
    this.ended = null;
    /** @type {{x: number, y: number, action: string, subject: string}|null} the agent's last pointer */
    this.pointer = null;
    /** @type {string|null} the page's last cursor at the driver's pointer, a PAGE_CURSORS keyword (null: none
     *  told, the page's default); the view shows it only while `youDrive` */
    this.cursor = null;
  }

  /** Take one message; whether it was a handoff message. */
  apply(msg) {
    switch (msg.type) {
      case 'control':
        this.control = {
          driver: msg.driver ?? null,
          kind: msg.kind ?? (msg.driver ? 'person' : null), // a service without handoff: any driver is a grant
          held: Boolean(msg.held),
          you: Boolean(msg.you) && msg.driver != null,
          sinceUs: msg.since_us ?? null,
          note: msg.note ?? null,
        };
        return true;
      case 'help-requested':
        this.help = { id: msg.id, reason: msg.reason, subject: msg.subject, untilUs: msg.until_us };
        this.ended = null;
        return true;
      case 'help-ended':
        if (this.help && this.help.id !== msg.id) return true; // an older request's end: the open one stays
        this.help = null;
        this.ended = { id: msg.id, outcome: msg.outcome, note: msg.note ?? null, by: msg.by ?? null };
        return true;
      case 'agent-pointer':
        this.pointer = { x: msg.x, y: msg.y, action: msg.action, subject: msg.subject };
        return true;
      case 'cursor': {
        const cursor = pageCursor(msg.cursor);
        if (cursor === null) return false; // not a keyword we know: ignored, the last one stays
        this.cursor = cursor;
        return true;
      }
      case 'frame-state':
        // Not a handoff message, but the page's cursor goes with its browser (a new one tells its own).
        if (!BROWSER_RUNS.has(msg.state)) this.cursor = null;
        return false;
      default:
        return false;
    }
  }

  /** The connection is gone: who drives, the open request and a cursor other than `default` are told anew to the
   * next watch (so a `default` cursor is not told: forget the last one). */
  connectionLost() {
    this.control = null;
    this.help = null;
    this.cursor = null;
  }

  /** Whether this connection's grant drives the frame. */
  get youDrive() {
    return Boolean(this.control?.you);
  }
}

/**
 * What the view's handoff controls show.
 * @param {HandoffState} state
 * @param {{canDrive: boolean, connected: boolean}} o canDrive: the token is a drive grant
 * @returns {{kind: 'agent'|'person'|null, label: string, takeOver: boolean, handBack: boolean}} `label` for the
 *   driver's kind ('' when nobody drives); `takeOver`/`handBack`: which button to show
 */
export function controlView(state, { canDrive, connected }) {
  const c = state.control;
  const kind = c?.driver ? c.kind : null;
  let label = '';
  if (kind === 'agent') label = 'agent';
  else if (kind === 'person') label = `${c.you ? 'you' : 'person'}${c.held ? ' · holding' : ''}`;
  const may = canDrive && connected;
  return { kind, label, takeOver: may && !state.youDrive, handBack: may && state.youDrive };
}

const OUTCOME_TEXT = {
  answered: (e) => `Handed back${e.by ? ` by ${e.by}` : ''}${e.note ? `: “${e.note}”` : ''}`,
  timeout: () => 'Nobody took over in time',
  cancelled: () => 'The request for help was withdrawn',
};

/**
 * The help banner: the open request (with Take over for a viewer who may drive and does not), or how the last
 * one ended; null when there is nothing to show.
 * @returns {{open: boolean, text: string, reason: string, subject: string, takeOver: boolean, note: string}|null}
 *   `note`: a line under an open request (to the viewer who holds the frame)
 */
export function helpView(state, { canDrive, connected }) {
  if (state.help) {
    const { reason, subject } = state.help;
    const you = state.youDrive;
    return { open: true, subject, reason, text: `${subject} asks for help: ${reason}`,
      takeOver: canDrive && connected && !you, note: you ? 'You have the frame: hand it back when done.' : '' };
  }
  if (state.ended) {
    const text = (OUTCOME_TEXT[state.ended.outcome] || (() => `Help request ${state.ended.outcome}`))(state.ended);
    return { open: false, subject: '', reason: '', text, takeOver: false, note: '' };
  }
  return null;
}

/**
 * The page's title while agents ask for help in `asking` frames (the subjects of their open requests): a person
 * on another tab sees it in the tab strip. `base` when nobody asks.
 * @param {string} base the page's own title
 * @param {string[]} asking who asks, one entry per frame with an open request
 */
export function helpTitle(base, asking) {
  if (!asking.length) return base;
  const who = [...new Set(asking)];
  const named = who.length === 1 ? `${who[0]} asks for help` : 'requests for help';
  return `(${asking.length}) ${named} · ${base}`;
}

const REFUSAL_TEXT = {
  superseded: {
    'take-over': 'A newer grant drives this frame: take over needs a fresh link (reload)',
    release: 'You no longer drive this frame: nothing to hand back',
  },
  forbidden: { '*': 'This token may not drive this frame' },
  expired: { '*': 'Your grant has expired: reload for a fresh link' },
  unauthorized: { '*': 'The service refused this grant' },
  'rate-limited': { '*': 'Too fast: try again in a moment' },
  'bad-input': { release: 'The note was refused (at most 2000 characters)' },
};

/** A refused take-over or release, in plain words (with the service's message). */
export function refusalText(step, code, message = '') {
  const texts = REFUSAL_TEXT[code] || {};
  const text = texts[step] || texts['*'] || `${step === 'release' ? 'Hand back' : 'Take over'} refused: ${code}`;
  return message ? `${text} (${message})` : text;
}

/**
 * Where to draw the agent's pointer: the frame's CSS point through the canvas's picture box (coords.js, as input
 * maps the other way), relative to `origin` (the overlay's containing block, client coordinates).
 * @param {{x: number, y: number}} pointer
 * @param {{box: {left:number, top:number, width:number, height:number}, fit?: string}} placement the canvas's
 *   content box and object-fit (input.js canvasPlacement)
 * @param {{width: number, height: number}} frame the frame's CSS size
 * @param {{left: number, top: number}} origin
 * @returns {{left: number, top: number, inside: boolean}} `inside`: the point is on the frame
 */
export function pointerSpot(pointer, placement, frame, origin) {
  const p = frameToClient(pointer.x, pointer.y, placement.box, frame.width, frame.height, placement.fit);
  const inside = pointer.x >= 0 && pointer.y >= 0 && pointer.x < frame.width && pointer.y < frame.height;
  return { left: p.x - origin.left, top: p.y - origin.top, inside };
}
