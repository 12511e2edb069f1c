// The demo page served at `/`: reads `token` and `frame` (repeatable) from the URL fragment, shows one view per
// frame (every frame the token may see when no frame is named) and the Go live form when shared frames are on.
// Fragment keys: token=T, frame=F (repeatable), control=C (a control token for Go live), stats=1,
// transport=webrtc (pictures over WebRTC, back to the WebSocket when ICE does not connect).

import { connect, mountFrame, mountTabUi, webCodecsAvailable } from './framestream.js';
import { canDrive, decodeClaims, roleOf } from './lib/token.js';
import { carriesFiles } from './lib/drops.js';
import { helpTitle } from './lib/handoff.js';

const $ = (id) => document.getElementById(id);
const params = new URLSearchParams(location.hash.slice(1));
let token = params.get('token'); // the newest: a demo service (--insecure-dev) hands out fresh ones
const named = params.getAll('frame').filter(Boolean);
const startWithStats = params.get('stats') === '1';
const transport = params.get('transport') === 'webrtc' ? 'webrtc' : 'websocket';
const views = new Map(); // frame id -> view
let client = null;
const BASE_TITLE = document.title;

// An agent asking for help while this tab is in the background: the tab's title says so.
function showHelpInTitle() {
  const asking = [...views.keys()].map((id) => client?.handoff(id)?.help).filter(Boolean)
    .map((help) => help.subject || 'an agent');
  document.title = helpTitle(BASE_TITLE, asking);
}

function pageMessage(text) {
  $('page-msg').textContent = text || '';
}

async function api(path, { method = 'GET', bearer = token, body } = {}) {
  const res = await fetch(path, {
    method,
    headers: { ...(bearer ? { Authorization: `Bearer ${bearer}` } : {}),
      ...(body ? { 'Content-Type': 'application/json' } : {}) },
    body: body ? JSON.stringify(body) : undefined,
    cache: 'no-store',
  });
  let data = null;
  try {
    data = await res.json();
  } catch {
    data = null;
  }
  return { ok: res.ok, status: res.status, data };
}

function addView(frameId) {
  if (views.has(frameId)) return views.get(frameId);
  // The link's token says whether we drive (the fresh demo tokens have its role; the client knows its own token
  // only once its token function answered).
  const drive = canDrive(roleOf(token));
  const view = mountFrame(client, frameId, $('frames'), { showStats: startWithStats, drive });
  // pages, navigation, dialogs, file choosers, downloads, copied text
  view.tabUi = mountTabUi(client, view, { drive });
  views.set(frameId, view);
  return view;
}

function removeView(frameId) {
  views.get(frameId)?.tabUi.destroy();
  views.get(frameId)?.destroy();
  views.delete(frameId);
  showHelpInTitle();
}

// Every frame the token may see: list them now and again every 10 s (frames come and go).
async function syncAllFrames() {
  const res = await api('frames');
  if (!res.ok) {
    pageMessage(`Cannot list frames: ${res.data?.error || res.status} ${res.data?.message || ''}`);
    return;
  }
  const ids = (res.data?.frames || []).map((f) => f.id);
  pageMessage(ids.length ? '' : 'No frame is live yet.');
  for (const id of ids) addView(id);
  for (const id of [...views.keys()]) if (!ids.includes(id)) removeView(id);
}

async function setUpGoLive() {
  let config;
  try {
    config = (await api('config', { bearer: null })).data;
  } catch {
    return;
  }
  window.framestream.config = config;
  if (!config || config.shared_frames !== true) return;
  const form = $('golive');
  const controlToken = params.get('control') || (roleOf(token) === 'control' ? token : '');
  form.elements.control.value = controlToken;
  form.hidden = false;
  form.addEventListener('submit', async (e) => {
    e.preventDefault();
    const msg = $('golive-msg');
    msg.textContent = '';
    const f = form.elements;
    const res = await api('frames', {
      method: 'POST',
      bearer: f.control.value.trim(),
      body: { url: f.url.value.trim(), width: Number(f.width.value), height: Number(f.height.value) },
    }).catch((err) => ({ ok: false, status: 0, data: { message: String(err) } }));
    if (!res.ok || !res.data?.id) {
      msg.textContent = `Could not go live: ${res.data?.error || res.status} ${res.data?.message || ''}`;
      return;
    }
    addView(res.data.id);
    if (named.length) {
      // Keep the new frame in the address so a reload shows it too.
      named.push(res.data.id);
      params.append('frame', res.data.id);
      history.replaceState(null, '', `#${params.toString()}`);
    }
  });
}

function setUpKeys() {
  const toggleAll = () => {
    const on = ![...views.values()].some((v) => !v.el.querySelector('.fs-stats').hidden);
    for (const v of views.values()) v.toggleStats(on);
  };
  $('stats-all').addEventListener('click', toggleAll);
  $('help-toggle').addEventListener('click', () => { $('help').hidden = !$('help').hidden; });
  document.addEventListener('keydown', (e) => {
    // A driven frame's keyboard sink stops its keys; here we only see keys meant for this page.
    const t = e.target;
    if (t instanceof HTMLInputElement || t instanceof HTMLTextAreaElement || e.ctrlKey || e.metaKey || e.altKey) {
      return;
    }
    if (e.key === 's') toggleAll();
    else if (e.key === '?') $('help').hidden = !$('help').hidden;
  });
  // Files dropped beside a frame's canvas (its bar, the page's header) would open in place of this page, and every
  // view with it: taken here and dropped nowhere. A canvas takes its own (web/lib/drops.js) before this sees them.
  for (const type of ['dragover', 'drop']) {
    document.addEventListener(type, (e) => {
      if (!e.defaultPrevented && carriesFiles(e.dataTransfer)) e.preventDefault();
    });
  }
}

// A service run with --insecure-dev (a local demo: a public key, loopback only) hands the demo page fresh tokens at
// /dev/token: the page then stays connected past its link's token, as an app that mints tokens would.
async function demoTokens() {
  const role = roleOf(token);
  if (role !== 'view' && role !== 'drive') return null; // (a control link keeps its own token)
  const fresh = async () => {
    const res = await fetch(`dev/token?role=${role}`, { cache: 'no-store' });
    if (!res.ok) throw new Error(`dev/token answered ${res.status}`);
    token = (await res.json()).token;
    return token;
  };
  try {
    await fresh();
    return fresh;
  } catch {
    return null; // a real service: the link's token is all there is
  }
}

async function main() {
  window.framestream = { client: null, views, config: null };
  setUpKeys();
  if (!token) {
    $('no-token').hidden = false;
    $('conn').hidden = true;
    $('token-form').addEventListener('submit', (e) => {
      e.preventDefault();
      location.hash = `token=${encodeURIComponent(e.target.elements.token.value.trim())}`;
      location.reload();
    });
    return;
  }
  if (!webCodecsAvailable()) {
    pageMessage('This browser has no WebCodecs VideoDecoder (it needs a recent Chromium, Edge, Safari or Firefox, '
      + 'and a secure page: https, or http on localhost).');
  }
  const claims = decodeClaims(token);
  $('who').textContent = claims ? `${claims.sub || 'anonymous'} · ${claims.role}` : 'unreadable token';

  client = connect({ token: (await demoTokens()) || token, transport });
  window.framestream.client = client;
  const conn = $('conn');
  const setConn = (state, text) => {
    conn.dataset.conn = state;
    conn.textContent = text;
  };
  client.on('open', () => setConn('open', 'connected'));
  client.on('close', (d) => {
    if (d.reconnectInMs === null) setConn('closed', `disconnected (${d.code})`);
    else setConn('waiting', `reconnecting in ${(d.reconnectInMs / 1000).toFixed(1)} s`);
  });
  for (const type of ['help-requested', 'help-ended', 'close']) client.on(type, showHelpInTitle);
  client.on('fatal', (d) => pageMessage(`The service refused this token (${d.code} ${d.reason}). `
    + 'Tokens are short-lived: ask for a new link.'));
  client.on('error', (d) => {
    if (d.frame === undefined || d.frame === null) pageMessage(`${d.code}: ${d.message || ''}`);
  });

  if (named.length) {
    for (const id of named) addView(id);
  } else {
    syncAllFrames().catch((err) => pageMessage(String(err)));
    setInterval(() => syncAllFrames().catch(() => {}), 10_000);
  }
  setUpGoLive();
}

main();
