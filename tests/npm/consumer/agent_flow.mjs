// Run in the scratch app against the real service (tests/npm/test_agent_service.py): the installed package's
// Node code mints grants, opens a frame, clicks, reads pictures, takes the Python client's tokens, goes
// through a handoff, and reads a download, answers a file chooser and drops files. Prints what the Python test
// checks as JSON; PNGs go to files. Last, the clicker frame resized in place: its page keeps its state.
import { writeFileSync } from 'node:fs';
import { inflateSync } from 'node:zlib';
import WS from 'ws';
import { AgentClient, sandboxKey, mintToken, verifyToken, TakenOver } from 'framestream/node';

/** The [r, g, b] at (x, y) of an 8-bit RGB or RGBA PNG, not interlaced (the service's screenshots). */
function pixelAt(png, x, y) {
  const buf = Buffer.from(png.buffer, png.byteOffset, png.byteLength);
  const idat = [];
  let header = null;
  for (let at = 8; at < buf.length;) {
    const length = buf.readUInt32BE(at);
    const kind = buf.toString('latin1', at + 4, at + 8);
    const data = buf.subarray(at + 8, at + 8 + length);
    if (kind === 'IHDR') header = { width: data.readUInt32BE(0), depth: data[8], type: data[9], interlace: data[12] };
    else if (kind === 'IDAT') idat.push(data);
    else if (kind === 'IEND') break;
    at += 12 + length;
  }
  if (!header || header.depth !== 8 || ![2, 6].includes(header.type) || header.interlace !== 0) {
    throw new Error(`not a PNG this reads: ${JSON.stringify(header)}`);
  }
  const bpp = header.type === 2 ? 3 : 4;
  const stride = header.width * bpp;
  const raw = inflateSync(Buffer.concat(idat));
  let prev = Buffer.alloc(stride);
  let row = prev;
  for (let r = 0; r <= y; r += 1) {
    const filter = raw[r * (stride + 1)];
    const line = raw.subarray(r * (stride + 1) + 1, (r + 1) * (stride + 1));
    row = Buffer.alloc(stride);
    for (let i = 0; i < stride; i += 1) {
      const a = i >= bpp ? row[i - bpp] : 0;
      const b = prev[i];
      const c = i >= bpp ? prev[i - bpp] : 0;
      const p = a + b - c;
      const paeth = Math.abs(p - a) <= Math.abs(p - b) && Math.abs(p - a) <= Math.abs(p - c) ? a
        : Math.abs(p - b) <= Math.abs(p - c) ? b : c;
      row[i] = (line[i] + [0, a, b, (a + b) >> 1, paeth][filter]) & 255;
    }
    prev = row;
  }
  return [...row.subarray(x * bpp, x * bpp + 3)];
}

/** `promise`, or a rejection naming `what` after `ms`. */
async function within(promise, ms, what) {
  let timer;
  const late = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: not within ${ms} ms`)), ms);
  });
  try {
    return await Promise.race([promise, late]);
  } finally {
    clearTimeout(timer);
  }
}

const cfg = JSON.parse(process.argv[2]);
const out = {};
const key = sandboxKey(cfg.secret, cfg.sandbox);
const agent = await AgentClient.connect(cfg.base, { key }); // Node's global WebSocket
const frame = await agent.openFrame(cfg.page, { width: 320, height: 200, dpr: 1 });
out.frame = frame;
const before = await agent.settle(frame.id);
writeFileSync(`${cfg.dir}/before.png`, before.png);
// The Python client's tokens, taken here: verified, and used over a `ws` socket (its grant was minted first, so
// it clicks first: a later grant would supersede it).
out.pythonClaims = verifyToken(key, cfg.pythonView);
const fromPython = await AgentClient.connect(cfg.base, { token: cfg.pythonView, grants: cfg.pythonGrant, WebSocket: WS });
const again = await fromPython.click(frame.id, 140, 100);
writeFileSync(`${cfg.dir}/again.png`, (await fromPython.settle(frame.id)).png);
out.again = again.seq;
await fromPython.close();

const step = await agent.click(frame.id, 140, 100);
const first = await agent.pictureAfter(frame.id, step.sentUs);
out.first = { captureUs: first.captureUs, sentUs: step.sentUs, width: first.width, height: first.height };
const after = await agent.settle(frame.id);
writeFileSync(`${cfg.dir}/after.png`, after.png);
out.minted = {
  view: mintToken(key, { role: 'view', frame: frame.id, sub: 'alice' }),
  step: mintToken(key, { role: 'drive', frame: frame.id, sub: 'agent', step: true }),
  control: mintToken(key, { role: 'control', sub: 'app' }),
};

// Handoff: the agent asks for help; a person takes over (agent steps refused), releases with a note.
const person = await AgentClient.connect(cfg.base, {
  key, subject: 'ana', grants: (f) => mintToken(key, { role: 'drive', frame: f, sub: 'ana' }),
});
await person.watch(frame.id);
const helped = agent.requestHelp(frame.id, 'please log in', { timeoutS: 60 });
const asked = await new Promise((resolve) => { const off = person.on('help-requested', (m) => { off(); resolve(m); }); });
out.asked = { reason: asked.reason, subject: asked.subject };
await person.step(frame.id, 'take-over', {});
try {
  await agent.click(frame.id, 10, 10);
  out.refused = null;
} catch (err) {
  out.refused = { typed: err instanceof TakenOver, code: err.code, frame: err.frame };
}
await person.release(frame.id, 'logged in as ana');
out.note = await helped;
out.unanswered = await agent.requestHelp(frame.id, 'anyone?', { timeoutS: 1 });
await person.close();

// Files: a download read back, a file chooser answered (heard by a connection that may drive), files dropped.
const tab = await agent.openFrame(`${cfg.pages}/tab.html`, { width: 640, height: 400, dpr: 1 });
await agent.click(tab.id, 100, 270); // the page's CSV download link
let listed = [];
for (let i = 0; i < 600 && !(listed.length && listed.every((d) => d.state === 'done')); i += 1) {
  await new Promise((resolve) => { setTimeout(resolve, 50); });
  listed = await agent.downloads(tab.id);
}
const csv = await agent.download(tab.id, listed[0].id);
out.downloaded = { name: listed[0]?.name, text: new TextDecoder().decode(csv) };
// A page's prompt answered (the marker goes green for "yes"), then a tab it opened closed with `page`.
await agent.watch(tab.id, { video: false }); // (dialogs and pages are told to watchers)
const heardOf = (type, test) => new Promise((resolve) => {
  const off = agent.on(type, (m) => { if (m.frame === tab.id && test(m)) { off(); resolve(m); } });
});
const prompted = heardOf('dialog', () => true);
await agent.click(tab.id, 320, 130);
const dialog = await prompted;
out.dialog = { kind: dialog.kind, message: dialog.message, open: agent.info(tab.id).dialogs.map((d) => d.id) };
await agent.answerDialog(tab.id, dialog.id, true, { text: 'yes' });
writeFileSync(`${cfg.dir}/answered.png`, (await agent.settle(tab.id)).png);
const twoTabs = heardOf('frame-state', (m) => m.pages?.length === 2);
await agent.click(tab.id, 320, 40); // the page's link to a new tab
const opened2 = (await twoTabs).pages.find((pg) => pg.active);
const oneTab = heardOf('frame-state', (m) => m.pages?.length === 1);
await agent.page(tab.id, 'close', opened2.id);
const left = (await oneTab).pages;
out.tabs = { opened: opened2.id, left: left.map((pg) => [pg.id, pg.url.split('/').pop()]),
  dialogsLeft: agent.info(tab.id).dialogs.length };
// A key's client says hello as one who may drive: it hears the file chooser its own click opens.
const driving = await AgentClient.connect(cfg.base, { key });
const files = await driving.openFrame(`${cfg.pages}/files.html`, { width: 640, height: 400, dpr: 1 });
const chooser = new Promise((resolve) => { const off = driving.on('file-chooser', (m) => { off(); resolve(m); }); });
await driving.click(files.id, 100, 30); // the page's <input type=file>
const opened = await chooser;
const picked = new File([new Uint8Array([200, 10, 0])], 'picked.bin');
out.chosen = await driving.chooseFiles(files.id, opened.id, [picked]);
writeFileSync(`${cfg.dir}/chosen.png`, (await driving.settle(files.id)).png);
const drop = await driving.openFrame(`${cfg.pages}/drop.html`, { width: 640, height: 400, dpr: 1 });
const png = Uint8Array.from(Buffer.from(cfg.bluePng, 'base64'));
out.dropped = await driving.dropFiles(drop.id, 400, 140, [
  new File(['hello from the desktop\n'], 'hello.txt', { type: 'text/plain' }),
  new File([png], 'blue.png', { type: 'image/png' })]);
writeFileSync(`${cfg.dir}/dropped.png`, (await driving.settle(drop.id)).png);
for (const id of [tab.id, files.id, drop.id]) await agent.deleteFrame(id, { purge: true });
await driving.close();

// Resized in place (smaller, the same dpr: the display it launched with holds it): the page keeps its state. A
// click first turns the button green (a page loaded again would be red), then PATCH /frames/{id}; the watched
// frame's video-config of 240x160 (there when resizeFrame resolves: listened for from before), then a picture
// newer than every picture before it, and the screenshot of the new size, its button's colour off its label.
const green = await agent.click(frame.id, 140, 100);
await agent.pictureAfter(frame.id, green.sentUs);
writeFileSync(`${cfg.dir}/before_resize.png`, (await agent.settle(frame.id)).png);
const configured = new Promise((resolve) => {
  const off = agent.on('video-config', (c) => {
    if (c.frame !== frame.id || c.width !== 240 || c.height !== 160) return;
    off();
    resolve({ config: c, lastUs: agent.info(frame.id).lastCaptureUs }); // (the old size's newest picture)
  });
});
out.resized = await agent.resizeFrame(frame.id, { width: 240, height: 160, dpr: 1 });
const atReturn = agent.info(frame.id).config; // resizeFrame resolves once this client has the new size's config
out.configAtReturn = [atReturn.width, atReturn.height];
const { config, lastUs } = await within(configured, 30_000, 'a video-config of 240x160');
const resizedShot = await agent.pictureAfter(frame.id, lastUs + 1, { timeoutS: 30 });
writeFileSync(`${cfg.dir}/resized.png`, resizedShot.png);
const watchedConfig = agent.info(frame.id).config;
out.resizedShot = {
  width: resizedShot.width, height: resizedShot.height, button: pixelAt(resizedShot.png, 60, 60),
  config: [config.width, config.height, config.css_width, config.css_height],
  watched: [watchedConfig.width, watchedConfig.height],
};
await agent.deleteFrame(frame.id, { purge: true });
await agent.close();
out.closed = !agent.connected;
console.log(JSON.stringify(out));
