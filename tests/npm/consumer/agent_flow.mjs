// Run in the scratch app against the real service (tests/npm/test_agent_service.py): the installed package's
// Node code mints grants, opens a frame, clicks, reads pictures, takes the Python client's tokens, goes
// through a handoff, and reads a download, answers a file chooser and drops files. Prints what the Python test
// checks as JSON; PNGs go to files.
import { writeFileSync } from 'node:fs';
import WS from 'ws';
import { AgentClient, sandboxKey, mintToken, verifyToken, TakenOver } from 'framestream/node';

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
await agent.deleteFrame(frame.id, { purge: true });
await agent.close();
out.closed = !agent.connected;
console.log(JSON.stringify(out));
