// The replay view (web/replay.html#token=T&frame=F[&recording=R]): a frame's recording with its steps beside it.
// The video plays the recording (its `video` link carries a ticket: a <video> sends no header); the list shows
// each step (who, what, how it ended), the drivers and the errors; clicking a step seeks to it and marks where it
// acted (a mouse or touch event's place, CSS pixels of the frame scaled to the video as shown). docs/protocol.md,
// "Recordings", has the routes and the sidecar's lines.

const $ = (id) => document.getElementById(id);

export function readFragment(hash) {
  const params = new URLSearchParams(hash.replace(/^#/, ''));
  return { token: params.get('token') || '', frame: params.get('frame') || '', recording: params.get('recording') };
}

/** Where a step acted, in the frame's CSS pixels, or null (the last pointer event of the step). */
export function stepPlace(line) {
  const events = Array.isArray(line.events) ? line.events : [];
  for (let i = events.length - 1; i >= 0; i -= 1) {
    const e = events[i];
    if ((e.kind === 'mouse' || e.kind === 'wheel') && typeof e.x === 'number') return { x: e.x, y: e.y };
    if (e.kind === 'touch' && e.points && e.points.length) return { x: e.points[0].x, y: e.points[0].y };
  }
  return null;
}

/** A step's one-line description. */
export function describeStep(line) {
  let what = line.kind || 'step';
  if (line.kind === 'input') {
    what = (line.events || []).map((e) => {
      if (e.kind === 'mouse') return `${e.action} ${Math.round(e.x)},${Math.round(e.y)}`;
      if (e.kind === 'text') return e.redacted ? `text (${e.length} hidden)` : `text ${JSON.stringify(e.text)}`;
      if (e.kind === 'key') return `key ${e.redacted ? '•' : e.key} ${e.action}`;
      return e.kind;
    }).join(', ');
  } else if (line.kind === 'navigate') {
    what = `navigate ${line.url || line.action}`;
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
    this.current = -1;
    this.ready = false;
  }

  seconds(tUs) {
    return Math.max(0, (tUs - this.recording.start_us) / 1e6);
  }

  /** Seek to step `index` (its first event's time plus `after` seconds) and mark where it acted. */
  async seekToStep(index, after = 0) {
    const line = this.steps[index];
    if (!line) return false;
    this.current = index;
    document.querySelectorAll('#steps li.current').forEach((li) => li.classList.remove('current'));
    document.querySelector(`#steps li[data-step="${index}"]`)?.classList.add('current');
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
    replay.ready = true;
  } catch (err) {
    problem(String(err.message || err));
  }
}

if (typeof document !== 'undefined' && document.getElementById('steps')) main();
