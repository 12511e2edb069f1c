// The replay view (web/replay.html#token=T&frame=F[&recording=R]): a frame's recording with its steps beside it.
// The video plays the recording (its `video` link carries a ticket: a <video> sends no header); the list shows
// each step (who, what, how it ended), the drivers and the errors; clicking a step seeks to it and marks where it
// acted (a mouse or touch event's place, CSS pixels of the frame scaled to the video as shown). As the video plays or
// seeks, the pointer is drawn where the steps left it, in the shape of the page's cursor then (the sidecar's
// `cursor` lines: Chromium's own cursor never reaches the recorded pictures), with who moved it and whether a button
// or finger was down, and the step under way is marked in the list; Up and Down go to the step before and after.
// docs/protocol.md, "Recordings", has the routes and the sidecar's lines.

import { pageCursor } from './pagecursor.js';

const $ = (id) => document.getElementById(id);

export function readFragment(hash) {
  const params = new URLSearchParams(hash.replace(/^#/, ''));
  return { token: params.get('token') || '', frame: params.get('frame') || '', recording: params.get('recording') };
}

/** Where a step acted, in the frame's CSS pixels, or null (the last pointer event of the step; a drop's point). */
export function stepPlace(line) {
  if (line.kind === 'drop' && typeof line.x === 'number') return { x: line.x, y: line.y };
  const events = Array.isArray(line.events) ? line.events : [];
  for (let i = events.length - 1; i >= 0; i -= 1) {
    const e = events[i];
    if ((e.kind === 'mouse' || e.kind === 'wheel') && typeof e.x === 'number') return { x: e.x, y: e.y };
    if (e.kind === 'touch' && e.points && e.points.length) return { x: e.points[0].x, y: e.points[0].y };
  }
  return null;
}

/** The last pointer event of a step's events: where it left the pointer and whether a button or finger was down. */
function pointerOf(line) {
  if (line.kind === 'drop' && typeof line.x === 'number') return { x: line.x, y: line.y, down: false };
  const events = Array.isArray(line.events) ? line.events : [];
  for (let i = events.length - 1; i >= 0; i -= 1) {
    const e = events[i];
    if (e.kind === 'mouse' && typeof e.x === 'number') {
      return { x: e.x, y: e.y, down: e.action === 'down' || (e.action === 'move' && e.buttons > 0) };
    }
    if (e.kind === 'wheel' && typeof e.x === 'number') return { x: e.x, y: e.y, down: false };
    if (e.kind === 'touch' && e.points && e.points.length) {
      return { x: e.points[0].x, y: e.points[0].y, down: e.action === 'start' || e.action === 'move' };
    }
  }
  return null;
}

// Frame states whose browser runs; any other ends the page's cursor (a new browser starts at `default`).
const RUNNING = new Set(['live', 'paused']);

/**
 * The pointer's course through a recording, in time order: at each applied step that moved it, and at each change of
 * the page's cursor once it has been somewhere, `{t_us, x, y, down, subject, cursor}` (CSS pixels of the frame).
 * @param {Array<object>} lines the sidecar's lines
 */
export function pointerTrack(lines) {
  // Steps are written once applied, after the events they caused: put every line back at its own time (a stable
  // sort keeps the written order of lines of the same time).
  const timed = lines.filter((l) => typeof l.t_us === 'number').sort((a, b) => a.t_us - b.t_us);
  const track = [];
  let cursor = 'default';
  let at = null;
  for (const line of timed) {
    if (line.type === 'cursor') {
      cursor = pageCursor(line.cursor) || 'default';
    } else if (line.type === 'state' && !RUNNING.has(line.state)) {
      cursor = 'default';
    } else if (line.type === 'step' && line.ok) {
      const place = pointerOf(line);
      if (!place) continue;
      at = { ...place, subject: String(line.subject ?? '') };
    } else {
      continue;
    }
    if (at) track.push({ t_us: line.t_us, ...at, cursor });
  }
  return track;
}

/** How many of `timed` (in time order) are at or before `tUs`. */
function countUntil(timed, tUs) {
  let lo = 0;
  let hi = timed.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (timed[mid].t_us <= tUs) lo = mid + 1; else hi = mid;
  }
  return lo;
}

/** Where `pointerTrack`'s pointer was at `tUs` (its last entry at or before then), or null before it moved. */
export function pointerAt(track, tUs) {
  const count = countUntil(track, tUs);
  return count ? track[count - 1] : null;
}

/** The index of the last of `steps` (in time order: a frame applies its steps one at a time) that began at or
 * before `tUs`, or -1 before the first. */
export function stepAt(steps, tUs) {
  return countUntil(steps, tUs) - 1;
}

// The pointer as drawn, 24x24 CSS pixels of SVG, and its hot spot (the point drawn at the pointer's place).
const OUTLINED = (d) => `<path d="${d}" fill="none" stroke="#fff" stroke-width="4" stroke-linecap="round"/>`
  + `<path d="${d}" fill="none" stroke="#000" stroke-width="1.6"/>`;
const SHAPES = {
  arrow: { hot: [2, 1], svg: '<path d="M2 1v17l4.5-4 3 7 3-1.3-2.9-6.7h6z" fill="#000" stroke="#fff" '
    + 'stroke-width="1.5" stroke-linejoin="round"/>' },
  hand: { hot: [9, 1], svg: '<path d="M7.5 2.6a1.5 1.5 0 0 1 3 0V11h.6V9.2a1.5 1.5 0 0 1 3 0V11h.5V9.8a1.5 1.5 0 0 1 '
    + '3 0V11.5a1.5 1.5 0 0 1 3 0V17a5.5 5.5 0 0 1-5.5 5.5h-2.6a5.5 5.5 0 0 1-4.4-2.2l-4-5.4a1.6 1.6 0 0 1 2.5-2l1.9 '
    + '2.3z" fill="#fff" stroke="#000" stroke-width="1.3" stroke-linejoin="round"/>' },
  beam: { hot: [12, 12], svg: OUTLINED('M8 2.5h2.5L12 4l1.5-1.5H16M12 4v16M8 21.5h2.5L12 20l1.5 1.5H16') },
  cross: { hot: [12, 12], svg: OUTLINED('M12 2v20M2 12h20') },
};
const KEYWORD_SHAPES = { pointer: 'hand', grab: 'hand', grabbing: 'hand', text: 'beam', 'vertical-text': 'beam',
  crosshair: 'cross', cell: 'cross', none: 'none' };

/** What the page's cursor keyword is drawn as: `arrow` (any keyword without a shape of its own), `hand`, `beam`,
 * `cross`, or `none` (nothing). */
export function pointerShape(cursor) {
  return KEYWORD_SHAPES[cursor] || 'arrow';
}

/** Mouse words read as a person says them: a press and release at one place is a click (its `clicks` 2: a double
 * click, the first click of it dropped), and a move to where a click follows is part of it (agents' clicks). */
function clicksTold(tokens) {
  const out = [];
  for (const t of tokens) {
    const last = out[out.length - 1];
    if (t.word === 'up' && last?.word === 'down' && last.at === t.at && last.e.button === t.e.button) {
      out.pop();
      const double = t.e.clicks === 2 && out[out.length - 1]?.word === 'click' && out[out.length - 1].at === t.at;
      if (double) out.pop();
      const mouseButton = t.e.button && t.e.button !== 'left' ? `${t.e.button} ` : '';
      const click = { word: `${mouseButton}${double ? 'double-click' : 'click'}`, at: t.at };
      if (out[out.length - 1]?.word === 'move' && out[out.length - 1].at === t.at) out.pop();
      out.push(click);
    } else {
      out.push(t);
    }
  }
  return out;
}

/** A step's one-line description. */
export function describeStep(line) {
  let what = line.kind || 'step';
  if (line.kind === 'input') {
    what = clicksTold((line.events || []).map((e) => {
      if (e.kind === 'mouse') return { word: e.action, at: `${Math.round(e.x)},${Math.round(e.y)}`, e };
      if (e.kind === 'text') {
        return { word: e.redacted ? `text (${e.length} hidden)` : `text ${JSON.stringify(e.text)}` };
      }
      if (e.kind === 'key') return { word: `key ${e.redacted ? '•' : e.key} ${e.action}` };
      return { word: e.kind };
    })).map((t) => (t.at ? `${t.word} ${t.at}` : t.word)).join(', ');
  } else if (line.kind === 'navigate') {
    what = `navigate ${line.url || line.action}`;
  } else if (line.kind === 'drop') {
    what = `drop ${(line.files || []).join(', ')} at ${Math.round(line.x)},${Math.round(line.y)}`;
  } else if (line.kind === 'dialog-answer') {
    what = `dialog ${line.accept ? 'OK' : 'Cancel'}`;
  }
  return `${line.subject}${line.step ? ' (step)' : ''}: ${what}${line.ok ? '' : ` → ${line.error}`}`;
}

async function getJson(path, token) {
  const resp = await fetch(path, { headers: { Authorization: `Bearer ${token}` } });
  const body = await resp.json().catch(() => ({}));
  if (!resp.ok) throw new Error(`${body.error || resp.status}: ${body.message || resp.statusText}`);
  return body;
}

async function getLines(path, token) {
  const resp = await fetch(path, { headers: { Authorization: `Bearer ${token}` } });
  if (!resp.ok) throw new Error(`${resp.status} ${resp.statusText}`);
  return (await resp.text()).split('\n').filter((l) => l.trim()).map((l) => JSON.parse(l));
}

class Replay {
  constructor(video, recording, lines) {
    this.video = video;
    this.recording = recording;
    this.lines = lines;
    this.steps = lines.filter((l) => l.type === 'step');
    this.track = pointerTrack(lines);
    this.current = -1;
    this.ready = false;
    this.drawn = ''; // the shape the pointer element holds
  }

  /** The capture clock at the video's current time. A seek to a step lands on its time, give or take the video
   * clock's rounding: the step counts as begun. */
  now() {
    return this.recording.start_us + this.video.currentTime * 1e6 + 1000;
  }

  /** Show the video's moment: the pointer, and the step it is in, marked in the list (scrolled into view). */
  show() {
    this.showPointer();
    const index = stepAt(this.steps, this.now());
    if (index !== this.current) this.highlight(index);
  }

  highlight(index) {
    this.current = index;
    document.querySelectorAll('#steps li.current').forEach((li) => li.classList.remove('current'));
    const li = document.querySelector(`#steps li[data-step="${index}"]`);
    li?.classList.add('current');
    li?.scrollIntoView({ block: 'nearest' });
  }

  /** Draw the pointer where it was at the video's current time (hidden before it first moved, or for `none`). */
  showPointer() {
    const el = $('pointer');
    const at = pointerAt(this.track, this.now());
    const shape = at ? pointerShape(at.cursor) : 'none';
    if (shape === 'none') { el.hidden = true; return; }
    const { hot, svg } = SHAPES[shape];
    if (this.drawn !== shape) {
      el.querySelector('svg').innerHTML = svg;
      el.dataset.shape = this.drawn = shape;
    }
    const scale = this.video.clientWidth / this.recording.css_width;
    el.style.left = `${at.x * scale - hot[0]}px`;
    el.style.top = `${at.y * scale - hot[1]}px`;
    el.style.setProperty('--hot-x', `${hot[0]}px`);
    el.style.setProperty('--hot-y', `${hot[1]}px`);
    el.classList.toggle('down', at.down);
    el.querySelector('.who').textContent = at.subject;
    el.hidden = false;
  }

  /** Keep the pointer and the current step on the video's time: each animation frame while it plays (a still
   * page's recording has seconds without a picture, when the video reports none), and after each seek. Up and
   * Down go to the step before and after. */
  follow() {
    const video = this.video;
    const tick = () => {
      this.show();
      if (!video.paused && !video.ended) requestAnimationFrame(tick);
    };
    video.addEventListener('play', () => requestAnimationFrame(tick));
    video.addEventListener('seeked', () => this.show());
    window.addEventListener('resize', () => this.showPointer());
    document.addEventListener('keydown', (e) => {
      if (e.altKey || e.ctrlKey || e.metaKey || e.target.closest?.('select, input, textarea')) return;
      const by = { ArrowUp: -1, ArrowDown: 1 }[e.key];
      if (!by) return;
      e.preventDefault();
      this.seekToStep(Math.max(0, Math.min(this.steps.length - 1, this.current + by)));
    });
    this.show();
  }

  seconds(tUs) {
    return Math.max(0, (tUs - this.recording.start_us) / 1e6);
  }

  /** Seek to step `index` (its first event's time plus `after` seconds) and mark where it acted. */
  async seekToStep(index, after = 0) {
    const line = this.steps[index];
    if (!line) return false;
    this.highlight(index);
    await this.seek(this.seconds(line.t_us) + after);
    this.mark(stepPlace(line));
    return true;
  }

  seek(seconds) {
    const video = this.video;
    return new Promise((resolve) => {
      const done = () => { video.removeEventListener('seeked', done); resolve(video.currentTime); };
      video.addEventListener('seeked', done);
      video.pause();
      video.currentTime = Math.min(seconds, Number.isFinite(video.duration) ? video.duration : seconds);
    });
  }

  mark(place) {
    const mark = $('mark');
    if (!place) { mark.hidden = true; return; }
    const scale = this.video.clientWidth / this.recording.css_width;
    mark.style.left = `${place.x * scale}px`;
    mark.style.top = `${place.y * scale}px`;
    mark.hidden = false;
  }

  /** The video's picture as drawn now, RGB at (x, y) in the frame's CSS pixels (for tests and tools). */
  pixel(x, y) {
    const canvas = document.createElement('canvas');
    canvas.width = this.video.videoWidth;
    canvas.height = this.video.videoHeight;
    const ctx = canvas.getContext('2d');
    ctx.drawImage(this.video, 0, 0);
    const scale = this.video.videoWidth / this.recording.css_width;
    return Array.from(ctx.getImageData(Math.round(x * scale), Math.round(y * scale), 1, 1).data.slice(0, 3));
  }
}

function render(replay) {
  const list = $('steps');
  list.textContent = '';
  let step = 0;
  for (const line of replay.lines) {
    const li = document.createElement('li');
    if (line.type === 'step') {
      const index = step;
      step += 1;
      li.dataset.step = String(index);
      if (!line.ok) li.classList.add('error');
      const button = document.createElement('button');
      button.type = 'button';
      button.textContent = describeStep(line);
      button.title = new Date(line.t_us / 1000).toISOString();
      button.addEventListener('click', () => { replay.seekToStep(index); });
      li.append(button);
    } else if (line.type === 'driver') {
      li.className = 'driver';
      li.textContent = `— driver: ${line.driver ?? 'nobody'}${line.held ? ' (holds)' : ''}${line.note ? `: ${line.note}` : ''}`;
    } else if (line.type === 'error' || line.type === 'url' || line.type === 'dialog') {
      li.className = 'note';
      li.textContent = `— ${line.type}: ${line.message || line.url || line.code || ''}`;
    } else {
      continue;
    }
    list.append(li);
  }
  const timeline = $('timeline');
  const total = (replay.recording.end_us ?? Date.now() * 1000) - replay.recording.start_us;
  replay.steps.forEach((line, index) => {
    const tick = document.createElement('i');
    tick.style.left = `${Math.min(100, (100 * (line.t_us - replay.recording.start_us)) / Math.max(1, total))}%`;
    if (!line.ok) tick.className = 'error';
    tick.title = describeStep(line);
    tick.addEventListener('click', (ev) => { ev.stopPropagation(); replay.seekToStep(index); });
    timeline.append(tick);
  });
  timeline.addEventListener('click', (ev) => {
    const share = (ev.clientX - timeline.getBoundingClientRect().left) / timeline.clientWidth;
    replay.seek((share * total) / 1e6);
  });
  replay.video.addEventListener('timeupdate', () => {
    $('now').style.left = `${Math.min(100, (100 * replay.video.currentTime * 1e6) / Math.max(1, total))}%`;
  });
}

async function main() {
  const { token, frame, recording } = readFragment(location.hash);
  const problem = (text) => { $('problem').hidden = false; $('problem').textContent = text; };
  if (!token || !frame) { problem('This page needs #token=…&frame=… (a control token, or a view token when viewers may read recordings).'); return; }
  try {
    const { recordings } = await getJson(`/frames/${encodeURIComponent(frame)}/recordings`, token);
    if (!recordings.length) { problem(`frame ${frame} has no recording yet`); return; }
    const chosen = recordings.find((r) => r.id === recording) || recordings[recordings.length - 1];
    const select = $('recording');
    for (const r of recordings) {
      const option = new Option(`${new Date(r.start_us / 1000).toISOString()} (${r.steps} steps)`, r.id);
      option.selected = r.id === chosen.id;
      select.append(option);
    }
    select.addEventListener('change', () => {
      location.hash = `token=${encodeURIComponent(token)}&frame=${encodeURIComponent(frame)}&recording=${select.value}`;
      location.reload();
    });
    const lines = await getLines(chosen.events, token);
    const video = $('video');
    const replay = new Replay(video, chosen, lines);
    window.framestreamReplay = replay;
    $('what').textContent = `frame ${frame}, ${chosen.steps} steps${chosen.active ? ' (recording)' : ''}`;
    render(replay);
    await new Promise((resolve, reject) => {
      video.addEventListener('loadeddata', resolve, { once: true });
      video.addEventListener('error', () => reject(new Error(`the video did not load (${video.error?.message || video.error?.code})`)), { once: true });
      video.src = chosen.video;
    });
    replay.follow();
    replay.ready = true;
  } catch (err) {
    problem(String(err.message || err));
  }
}

if (typeof document !== 'undefined' && document.getElementById('steps')) main();
