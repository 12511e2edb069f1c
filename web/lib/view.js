// A ready-made frame view: canvas, state overlay, who drives, view-only/driving badge, stats overlay and
// messages, plus input and the page's cursor while driving (pagecursor.js) when the token is a drive grant, and the
// handoff UI (handoffui.js: Take over / Hand back, the agent's request for help, its pointer). Built on the client's
// low-level watch() and attachInput(); an embedder who wants its own chrome can use those directly.

import { attachInput } from './input.js';
import { ensureStyle } from './style.js';
import { mountHandoff } from './handoffui.js';
import { formatLink, formatStats } from './stats.js';
import { canDrive } from './token.js';
import { followPageCursor } from './pagecursor.js';
import { FULLSCREEN_CSS, mountFullscreen } from './fullscreen.js';

/** The frame's CSS size from its `video-config` (what input and drops map to), or null before the first one. */
export function frameCssSize(client, frameId) {
  const cfg = client.info(frameId)?.config;
  return cfg ? { width: cfg.css_width, height: cfg.css_height } : null;
}

const STYLE_ID = 'fs-view-style';
const CSS = `
.fs-frame{margin:0;display:inline-flex;flex-direction:column;gap:4px;max-width:100%;font:13px/1.4 system-ui,sans-serif}
.fs-bar{display:flex;flex-wrap:wrap;align-items:center;gap:6px;color:#ddd}
.fs-title{font-weight:600}
.fs-url{color:#9ab;max-width:40ch;overflow:hidden;text-overflow:ellipsis;white-space:nowrap}
.fs-badge{border-radius:3px;padding:0 6px;font-size:12px;background:#444;color:#fff}
.fs-badge[data-state=live]{background:#1d6b35}
.fs-badge[data-state=launching]{background:#6b5b1d}
.fs-badge[data-state=paused]{background:#3b4f6b}
.fs-badge[data-state=closed],.fs-badge[data-state=error],.fs-badge[data-state=ended]{background:#7a2626}
.fs-mode[data-mode=view]{background:#555}
.fs-mode[data-mode=drive]{background:#2456a6}
.fs-mode[data-mode=lost]{background:#a65b24}
.fs-stats-toggle,.fs-full-toggle{font:inherit;font-size:12px;padding:0 6px;cursor:pointer}
.fs-stage{position:relative;display:inline-block;max-width:100%;line-height:0;background:#111}
.fs-canvas{display:block;max-width:100%;height:auto;outline:none}
.fs-frame[data-drive] .fs-canvas{cursor:default}
.fs-frame[data-focused] .fs-stage{box-shadow:0 0 0 2px #2456a6}
.fs-stage canvas[data-dropping]{outline:3px dashed #5b9;outline-offset:-3px}
.fs-overlay{position:absolute;inset:0;display:flex;align-items:center;justify-content:center;pointer-events:none;
  background:rgba(0,0,0,.45);color:#fff;font:600 18px/1.3 system-ui,sans-serif;text-align:center;padding:1em}
.fs-overlay[hidden],.fs-stats[hidden],.fs-toast[hidden]{display:none}
.fs-stats{position:absolute;left:6px;top:6px;pointer-events:none;background:rgba(0,0,0,.7);color:#9f9;
  font:12px/1.4 ui-monospace,monospace;padding:2px 6px;border-radius:3px;white-space:pre}
.fs-toast{position:absolute;left:50%;bottom:8px;transform:translateX(-50%);pointer-events:none;
  background:rgba(122,38,38,.92);color:#fff;font:13px/1.4 system-ui,sans-serif;padding:3px 10px;border-radius:3px}
`;

const STATE_TEXT = {
  launching: 'Starting…',
  paused: 'Paused',
  closed: 'Closed',
  error: 'Error',
  ended: 'This frame has ended',
};

const ERROR_TEXT = {
  superseded: 'Control taken back: someone with a newer grant drives',
  'rate-limited': 'Too much input: slowed down',
  forbidden: 'Not allowed',
  expired: 'Your grant has expired',
  replayed: 'Grant already used',
  'bad-input': 'Input refused',
  capacity: 'No room for another browser',
  'unknown-frame': 'Unknown frame',
  printing: 'The page is still printing: input was not applied',
};

/**
 * Mount a view of `frameId` into `container`.
 * @param {import('../framestream.js').FramestreamClient} client
 * @param {string} frameId
 * @param {HTMLElement} container
 * @param {{showStats?: boolean, title?: string, drive?: boolean, pauseOffscreen?: boolean}} [opts] `drive`: this
 *   viewer may drive (input, Take over); default: the client's token is a drive grant (unknown before a token
 *   function gave the first token: then say it). `pauseOffscreen` (default true): while the view is out of sight
 *   (scrolled or panned away, or not displayed), its frame is watched without pictures (client.setOffscreen)
 * @returns {{el: HTMLElement, canvas: HTMLCanvasElement, frameId: string, toggleStats(on?: boolean): boolean,
 *            toggleFullscreen(): Promise<boolean>, destroy(): void}}
 */
export function mountFrame(client, frameId, container, opts = {}) {
  const { showStats = false, title, drive = canDrive(client.role), pauseOffscreen = true } = opts;
  const doc = container.ownerDocument;
  ensureStyle(doc, STYLE_ID, CSS + FULLSCREEN_CSS);
  const el = doc.createElement('figure');
  el.className = 'fs-frame';
  el.dataset.frame = frameId;
  el.innerHTML = `
    <figcaption class="fs-bar">
      <span class="fs-title"></span>
      <span class="fs-badge fs-state" data-state="connecting">connecting</span>
      <span class="fs-badge fs-mode"></span>
      <span class="fs-driver"></span>
      <span class="fs-viewers"></span>
      <span class="fs-url"></span>
      <button type="button" class="fs-stats-toggle" title="statistics (key s)">stats</button>
      <button type="button" class="fs-full-toggle" aria-pressed="false">full screen</button>
    </figcaption>
    <div class="fs-stage">
      <canvas class="fs-canvas" width="2" height="2"></canvas>
      <div class="fs-overlay"><span class="fs-overlay-text">Connecting…</span></div>
      <div class="fs-stats" hidden></div>
      <div class="fs-toast" hidden></div>
    </div>`;
  const $ = (sel) => el.querySelector(sel);
  const canvas = $('.fs-canvas');
  canvas.dataset.frame = frameId;
  $('.fs-title').textContent = title || frameId;
  container.appendChild(el);

  const mode = $('.fs-mode');
  const setMode = (m, text) => {
    mode.dataset.mode = m;
    mode.textContent = text;
  };
  if (drive) {
    el.dataset.drive = '';
    setMode('drive', 'driving');
  } else {
    setMode('view', 'view only');
    canvas.title = 'view only: this token cannot drive';
  }

  let frameState = null; // last frame-state
  let connected = client.state === 'open';
  let wasConnected = connected; // before the first welcome it is "connecting", afterwards "reconnecting"
  let quiet = false; // the connection's ping is unanswered: its last picture may be older than the page
  let stale = false; // the canvas's picture was drawn before the connection was lost or the frame unseen
  let lost = false; // control taken back from us
  let ours = false; // our grant drove at the last `control`
  let ended = false;
  let input = null;

  const overlay = $('.fs-overlay');
  const overlayText = $('.fs-overlay-text');
  const render = () => {
    const state = ended ? 'ended' : frameState ? frameState.state : null;
    const badge = $('.fs-state');
    const offline = wasConnected || client.state === 'closed' ? 'offline' : 'connecting';
    badge.dataset.state = connected ? state || 'connecting' : offline;
    badge.textContent = badge.dataset.state;
    let text = null;
    if (!connected) {
      if (client.state === 'closed') text = 'Disconnected';
      else text = wasConnected ? 'Reconnecting…' : 'Connecting…';
    }
    else if (quiet) text = 'Checking connection…';
    else if (ended) text = STATE_TEXT.ended;
    else if (!state) text = 'Connecting…';
    else if (state !== 'live') {
      text = STATE_TEXT[state] || state;
      if (frameState.message) text += `: ${frameState.message}`;
    }
    else if (stale) text = 'Updating…'; // until the first picture of the watch: never an older page as current
    overlay.hidden = text === null;
    if (text !== null) overlayText.textContent = text;
    el.dataset.state = badge.dataset.state;
    if (frameState) {
      const driver = frameState.driver;
      $('.fs-driver').textContent = driver ? `driven by ${driver}` : 'nobody drives';
      $('.fs-viewers').textContent = `${frameState.viewers} viewer${frameState.viewers === 1 ? '' : 's'}`;
      $('.fs-url').textContent = frameState.url || '';
      $('.fs-url').title = frameState.url || '';
    }
  };
  render();

  let toastTimer = null;
  const toast = (text, ms = 4000) => {
    const t = $('.fs-toast');
    t.textContent = text;
    t.hidden = false;
    clearTimeout(toastTimer);
    toastTimer = setTimeout(() => { t.hidden = true; }, ms);
  };

  // --- stats ---
  const statsEl = $('.fs-stats');
  let statsTimer = null;
  const paintStats = () => {
    const info = client.info(frameId);
    if (!info) return;
    const cfg = info.config;
    statsEl.textContent = `${formatStats(info.stats)}\n`
      + `${cfg ? `${cfg.width}x${cfg.height} ${cfg.codec}` : 'no video yet'} · drawn ${info.drawn}`
      + ` · keyframe asks ${info.keyframeRequests} · decoder errors ${info.decoderErrors}`
      + ` · ${info.transport ?? 'websocket'}`
      + (info.link ? `\n${formatLink(cfg, info.link)}` : '');
  };
  const toggleStats = (on = statsEl.hidden) => {
    statsEl.hidden = !on;
    clearInterval(statsTimer);
    if (on) {
      paintStats();
      statsTimer = setInterval(paintStats, 500);
    }
    return on;
  };
  $('.fs-stats-toggle').addEventListener('click', () => toggleStats());
  if (showStats) toggleStats(true);

  // --- handing over: who drives, Take over / Hand back, the agent's request for help and pointer ---
  const handoff = mountHandoff(client, { el, canvas, frameId, get input() { return input; } }, { drive });

  // --- the client's events for this frame ---
  const offs = [];
  const mine = (type, fn) => offs.push(client.on(type, (d) => {
    if (d.frame === frameId) fn(d);
  }));
  mine('frame-state', (d) => {
    frameState = d;
    render();
  });
  mine('control', (d) => {
    // `control` also comes on joining, when a hold lapses and on a hand-back: control is "taken back" only when
    // our grant drove and another driver has the frame now.
    const wasOurs = ours;
    ours = Boolean(d.you);
    if (d.you) {
      lost = false;
      if (drive) setMode('drive', 'driving');
    } else if (drive && wasOurs && d.driver !== null) {
      lost = true;
      setMode('lost', 'control taken back');
      toast(d.driver ? `Control taken back by ${d.driver}` : 'Control taken back');
      input?.releaseAll();
    }
    if (frameState) frameState = { ...frameState, driver: d.driver };
    render();
  });
  mine('input-ack', (d) => {
    handoff.answer(d);
    if (lost && drive) {
      lost = false;
      setMode('drive', 'driving');
    }
  });
  mine('error', (d) => {
    if (handoff.answer(d)) return; // a refused take-over or hand-back: said beside its button
    if (d.code === 'superseded' && client.handoff(frameId)?.control?.kind === 'agent') {
      toast('The agent drives: press Take over to use the page');
      return;
    }
    if (d.code === 'superseded') {
      lost = true;
      setMode('lost', 'control taken back');
    }
    if (d.code === 'unknown-frame') {
      ended = true;
      render();
    }
    toast(`${ERROR_TEXT[d.code] || d.code}${d.message ? ` (${d.message})` : ''}`);
  });
  mine('decoder-error', (d) => {
    if (d.fatal) toast(`This browser cannot decode the stream: ${d.error}`, 10000);
  });
  offs.push(client.on('open', () => {
    connected = true;
    wasConnected = true;
    quiet = false;
    render();
  }));
  offs.push(client.on('close', () => {
    connected = false;
    quiet = false;
    render();
  }));
  mine('stale', (d) => {
    stale = d.stale;
    render();
  });
  offs.push(client.on('quiet', (d) => {
    quiet = d.quiet;
    render();
  }));

  // --- input ---
  if (drive) {
    input = attachInput(canvas, {
      frameSize: () => frameCssSize(client, frameId),
      // While control is lost, the agent drives or we handed it back, only discrete events go (a success shows we
      // drive again); moves would only bring a stream of `superseded` errors, or grab back a frame handed back.
      send: (events) => {
        const quiet = lost || handoff.quiet();
        const list = quiet ? events.filter((e) => !(e.kind === 'mouse' && e.action === 'move')) : events;
        if (list.length) client.sendInput(frameId, list);
      },
      busy: () => client.inputInFlight > 16,
    });
    input.sink.addEventListener('focus', () => { el.dataset.focused = ''; });
    input.sink.addEventListener('blur', () => { delete el.dataset.focused; });
  }
  // The page's cursor (a hand over links, an I-beam over text) on the canvas while this viewer drives.
  const cursor = drive ? followPageCursor(client, frameId, canvas) : null;

  const fullscreen = mountFullscreen({ el, button: $('.fs-full-toggle'), drive, input: () => input, toast });

  // Out of sight, nobody sees its pictures: the frame is watched without them, and may pause. Watched so until
  // the observer's first answer (before the connection opens, as a rule), so a view out of sight at the start
  // never resumes or reopens its frame. Another view full screen covers this one too (the observer cannot tell).
  const IO = doc.defaultView?.IntersectionObserver;
  let inSight = null; // the observer's last answer
  const covered = () => {
    const full = doc.fullscreenElement;
    return Boolean(full) && full !== el && !full.contains(el);
  };
  const seen = () => {
    if (inSight !== null) client.setOffscreen(frameId, !inSight || covered());
  };
  const sight = pauseOffscreen && IO ? new IO((entries) => {
    inSight = entries[entries.length - 1].isIntersecting;
    seen();
  }) : null;
  client.watch(frameId, canvas, { offscreen: sight !== null });
  sight?.observe($('.fs-stage'));
  if (sight) doc.addEventListener('fullscreenchange', seen);

  return {
    el,
    canvas,
    frameId,
    input,
    toggleStats,
    toggleFullscreen: fullscreen.toggle,
    toast,
    destroy() {
      fullscreen.destroy();
      sight?.disconnect();
      doc.removeEventListener('fullscreenchange', seen);
      for (const off of offs) off();
      clearInterval(statsTimer);
      clearTimeout(toastTimer);
      input?.detach();
      cursor?.destroy();
      handoff.destroy();
      client.unwatch(frameId);
      el.remove();
    },
  };
}
