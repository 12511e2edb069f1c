// AgentClient with a scripted socket and fetch (the real service is in test_agent_service.py): what it sends,
// how answers, refusals and the handoff messages come back.
import { test, mock } from 'node:test';
import assert from 'node:assert/strict';
import {
  AgentClient, sandboxKey, verifyToken, Superseded, TakenOver, ServiceError, ConnectionLost, Unauthorized, UnknownFrame,
  BadMessage,
} from '../../web/node/index.js';

const key = sandboxKey('unit-secret', 'unit');

class ScriptedSocket {
  static last = null;

  constructor(url) {
    this.url = url;
    this.sent = [];
    this.readyState = 0;
    this.listeners = {};
    ScriptedSocket.last = this;
    queueMicrotask(() => { this.readyState = 1; this.fire('open', {}); });
  }

  addEventListener(type, fn) { (this.listeners[type] ??= []).push(fn); }

  fire(type, event) { for (const fn of this.listeners[type] ?? []) fn(event); }

  send(text) { this.sent.push(JSON.parse(text)); }

  close(code = 1000, reason = '') { this.serverClose(code, reason); }

  // --- the service's side ---
  reply(msg) { this.fire('message', { data: JSON.stringify(msg) }); }

  picture(slot, captureUs, flags = 0) {
    const bytes = new Uint8Array(20);
    const view = new DataView(bytes.buffer);
    view.setUint8(0, 1);
    view.setUint8(1, flags);
    view.setUint16(2, slot);
    view.setUint32(4, 7);
    view.setBigUint64(8, BigInt(captureUs));
    this.fire('message', { data: bytes.buffer });
  }

  serverClose(code, reason = '') {
    if (this.readyState === 3) return;
    this.readyState = 3;
    this.fire('close', { code, reason });
  }

  async next(type) {
    for (;;) {
      const msg = this.sent.find((m) => m.type === type && !m.seen);
      if (msg) { msg.seen = true; return msg; }
      await new Promise((r) => setImmediate(r));
    }
  }
}

async function connected(options = {}) {
  const pending = AgentClient.connect('http://127.0.0.1:1', { key, WebSocket: ScriptedSocket, ...options });
  await new Promise((r) => setImmediate(r));
  const ws = ScriptedSocket.last;
  const hello = await ws.next('hello');
  ws.reply({ type: 'welcome', protocol: 1, sandbox: 'unit', shared_frames: true });
  return { agent: await pending, ws, hello };
}

test('hello with a minted drive token (not a step grant); each step under its own fresh one-step grant', async () => {
  const { agent, ws, hello } = await connected();
  assert.equal(ws.url, 'ws://127.0.0.1:1/ws');
  const claims = verifyToken(key, hello.token);
  assert.deepEqual([claims.role, claims.step, claims.frm], ['drive', false, '*']);
  const first = agent.click('f1', 10, 20);
  const msg1 = await ws.next('input');
  ws.reply({ type: 'input-ack', frame: 'f1', seq: msg1.seq });
  const step = await first;
  assert.equal(step.seq, msg1.seq);
  assert.ok(step.ackedUs >= step.sentUs);
  assert.deepEqual(msg1.events.map((e) => e.action), ['move', 'down', 'up']);
  const second = agent.press('f1', 'Control+A');
  const msg2 = await ws.next('input');
  ws.reply({ type: 'input-ack', frame: 'f1', seq: msg2.seq });
  await second;
  const [g1, g2] = [verifyToken(key, msg1.grant), verifyToken(key, msg2.grant)];
  assert.ok(g1.step && g2.step && g1.frm === 'f1' && g1.sub === 'agent');
  assert.notEqual(g1.jti, g2.jti);
  assert.ok(msg2.seq > msg1.seq);
  await agent.close();
});

test('refusals are typed errors carrying code, frame and seq', async () => {
  const { agent, ws } = await connected();
  const superseded = agent.type('f1', 'hi');
  const m1 = await ws.next('input');
  ws.reply({ type: 'error', code: 'superseded', message: 'newer grant', frame: 'f1', seq: m1.seq });
  await assert.rejects(superseded, (e) => e instanceof Superseded && e instanceof ServiceError
    && e.code === 'superseded' && e.frame === 'f1' && e.seq === m1.seq);
  const taken = agent.scroll('f1', 5, 5, { dy: 100 });
  const m2 = await ws.next('input');
  ws.reply({ type: 'error', code: 'taken-over', message: 'a person holds the frame', frame: 'f1', seq: m2.seq });
  await assert.rejects(taken, (e) => e instanceof TakenOver && e.code === 'taken-over');
  const watch = agent.watch('nope');
  ws.reply({ type: 'error', code: 'unknown-frame', message: 'no such frame', frame: 'nope' });
  await assert.rejects(watch, UnknownFrame);
  const odd = agent.drag('f1', 0, 0, 5, 5);
  const m3 = await ws.next('input');
  ws.reply({ type: 'error', code: 'some-new-code', message: '?', frame: 'f1', seq: m3.seq });
  await assert.rejects(odd, (e) => e.constructor === ServiceError && e.code === 'some-new-code');
  await agent.close();
});

test('requestHelp: request-help under a fresh step grant, the note of the help-ended that answers it', async () => {
  const { agent, ws } = await connected();
  const watching = ws.next('watch');
  const help = agent.requestHelp('f1', 'log in, please', { timeoutS: 60 });
  // Waiting for a person takes no pictures: the frame may pause meanwhile.
  assert.equal((await watching).video, false);
  ws.reply({ type: 'frame-state', frame: 'f1', state: 'live', url: 'http://127.0.0.1:1/', viewers: 1, driver: null });
  const req = await ws.next('request-help');
  assert.equal(req.reason, 'log in, please');
  assert.equal(req.timeout_s, 60);
  assert.ok(verifyToken(key, req.grant).step);
  ws.reply({ type: 'input-ack', frame: 'f1', seq: req.seq });
  ws.reply({ type: 'help-ended', frame: 'other', id: 'h9', outcome: 'answered', note: 'not this one' });
  ws.reply({ type: 'help-requested', frame: 'f1', id: 'h1', reason: 'log in, please', subject: 'agent', until_us: 1 });
  ws.reply({ type: 'help-ended', frame: 'f1', id: 'h1', outcome: 'answered', note: 'logged in as ana', by: 'ana' });
  assert.equal(await help, 'logged in as ana');

  const unanswered = agent.requestHelp('f1', 'captcha', { timeoutS: 1 });
  const req2 = await ws.next('request-help');
  ws.reply({ type: 'input-ack', frame: 'f1', seq: req2.seq });
  ws.reply({ type: 'help-requested', frame: 'f1', id: 'h2', reason: 'captcha', subject: 'agent', until_us: 1 });
  ws.reply({ type: 'help-ended', frame: 'f1', id: 'h2', outcome: 'timeout' });
  assert.equal(await unanswered, null);

  const refused = agent.requestHelp('f1', 'again');
  const req3 = await ws.next('request-help');
  ws.reply({ type: 'error', code: 'taken-over', message: 'a person holds it', frame: 'f1', seq: req3.seq });
  await assert.rejects(refused, TakenOver);

  const release = agent.release('f1', 'done: the form is sent');
  const rel = await ws.next('release');
  assert.equal(rel.note, 'done: the form is sent');
  assert.ok(verifyToken(key, rel.grant).step);
  ws.reply({ type: 'input-ack', frame: 'f1', seq: rel.seq });
  assert.equal((await release).seq, rel.seq);
  await agent.close();
});

test('pictureAfter waits for a picture captured after the time, then takes the screenshot', async () => {
  const png = Buffer.alloc(24);
  png.writeUInt32BE(0x89504e47, 0);
  png.writeUInt32BE(640, 16);
  png.writeUInt32BE(400, 20);
  const asked = [];
  const fetch = async (url, init) => {
    asked.push([url, init.headers.Authorization]);
    return new Response(png, { status: 200, headers: { 'X-Capture-Time-Us': '2000' } });
  };
  const { agent, ws } = await connected({ fetch });
  const shot = agent.pictureAfter('f1', 1500);
  await ws.next('watch');
  ws.reply({ type: 'video-config', frame: 'f1', slot: 3, codec: 'avc1.42C01F', width: 640, height: 400, css_width: 640, css_height: 400 });
  ws.picture(3, 1000, 1);
  await new Promise((r) => setImmediate(r));
  assert.equal(asked.length, 0, 'no screenshot before a picture after 1500');
  ws.picture(3, 2000);
  const got = await shot;
  assert.deepEqual([got.width, got.height, got.captureUs], [640, 400, 2000]);
  assert.equal(asked[0][0], 'http://127.0.0.1:1/frames/f1/screenshot');
  assert.equal(verifyToken(key, asked[0][1].slice('Bearer '.length)).role, 'drive');  // the connection's
  await agent.close();
});

test('resizeFrame: PATCH /frames/<id> under a control token with the size (dpr only when given); the frame mapped',
  async () => {
    const asked = [];
    const answers = [
      { status: 200, body: { id: 'f 1', url: 'http://127.0.0.1:3000/', state: 'live', width: 240, height: 160,
        dpr: 1, encoded_width: 240, encoded_height: 160, viewers: 2, driver: 'agent', message: '' } },
      { status: 200, body: { id: 'f 1', url: 'http://127.0.0.1:3000/', state: 'launching', width: 400, height: 250,
        dpr: 2, encoded_width: 800, encoded_height: 500, viewers: 2, driver: null, message: 'resized' } },
      { status: 400, body: { error: 'bad-message', message: 'width: 20 is out of range' } },
    ];
    const fetch = async (url, init) => {
      asked.push({ url, method: init.method, headers: init.headers, body: JSON.parse(init.body) });
      const { status, body } = answers.shift();
      return new Response(JSON.stringify(body), { status, headers: { 'Content-Type': 'application/json' } });
    };
    const { agent } = await connected({ fetch });
    const inPlace = await agent.resizeFrame('f 1', { width: 240, height: 160, dpr: 1 });
    assert.deepEqual(inPlace, { id: 'f 1', url: 'http://127.0.0.1:3000/', state: 'live', width: 240, height: 160,
      dpr: 1, encoded_width: 240, encoded_height: 160, viewers: 2, driver: 'agent', message: '' });
    const relaunched = await agent.resizeFrame('f 1', { width: 400, height: 250 });
    assert.deepEqual([relaunched.state, relaunched.width, relaunched.height, relaunched.dpr, relaunched.driver,
      relaunched.encoded_width, relaunched.encoded_height, relaunched.message],
    ['launching', 400, 250, 2, null, 800, 500, 'resized']);
    await assert.rejects(agent.resizeFrame('f 1', { width: 20, height: 160 }),
      (e) => e instanceof BadMessage && e.status === 400 && e.frame === 'f 1');
    assert.equal(asked.length, 3);
    for (const a of asked) {
      assert.equal(a.url, 'http://127.0.0.1:1/frames/f%201');
      assert.equal(a.method, 'PATCH');
      assert.equal(a.headers['Content-Type'], 'application/json');
      const claims = verifyToken(key, a.headers.Authorization.slice('Bearer '.length));
      assert.deepEqual([claims.role, claims.sub], ['control', 'agent']);
    }
    assert.deepEqual(asked.map((a) => a.body), [{ width: 240, height: 160, dpr: 1 }, { width: 400, height: 250 },
      { width: 20, height: 160 }]);
    await agent.close();
  });

test('resizeFrame needs a control token: a client without one is refused before anything is sent', async () => {
  let fetched = 0;
  const fetch = async () => { fetched += 1; return new Response('{}'); };
  const agent = AgentClient.connect('http://127.0.0.1:1', { token: 'view.token', WebSocket: ScriptedSocket, fetch });
  await new Promise((r) => setImmediate(r));
  await ScriptedSocket.last.next('hello');
  ScriptedSocket.last.reply({ type: 'welcome', protocol: 1, sandbox: 'unit', shared_frames: true });
  const client = await agent;
  await assert.rejects(client.resizeFrame('f1', { width: 240, height: 160 }), (e) => e.code === 'forbidden');
  assert.equal(fetched, 0);
  await client.close();
});

test('a second video-config of another size for a watched frame is followed: its pictures count under it', async () => {
  const png = Buffer.alloc(24);
  png.writeUInt32BE(0x89504e47, 0);
  png.writeUInt32BE(240, 16);
  png.writeUInt32BE(160, 20);
  const shots = [];
  const fetch = async (url) => {
    shots.push(url);
    return new Response(png, { status: 200, headers: { 'X-Capture-Time-Us': '5000' } });
  };
  const { agent, ws } = await connected({ fetch });
  const watching = agent.watch('f1');
  await ws.next('watch');
  ws.reply({ type: 'video-config', frame: 'f1', slot: 4, codec: 'avc1.42C01F', width: 320, height: 200, css_width: 320, css_height: 200 });
  assert.equal((await watching).width, 320);
  ws.picture(4, 1000, 1);
  const seen = [];
  agent.on('video-config', (c) => seen.push([c.width, c.height, agent.info('f1').pictures]));
  ws.reply({ type: 'video-config', frame: 'f1', slot: 4, codec: 'avc1.42C01F', width: 240, height: 160, css_width: 240, css_height: 160 });
  assert.deepEqual(seen, [[240, 160, 1]]);
  const config = agent.info('f1').config;
  assert.deepEqual([config.width, config.height, config.css_width, config.css_height], [240, 160, 240, 160]);
  assert.equal(await agent.watch('f1'), config, 'watching again answers the config of the new size');
  const shot = agent.pictureAfter('f1', 1001);
  ws.picture(4, 5000, 1);  // the first picture of the new size: still counted under the slot
  const got = await shot;
  assert.deepEqual([got.width, got.height, got.captureUs], [240, 160, 5000]);
  assert.deepEqual([agent.info('f1').pictures, agent.info('f1').lastCaptureUs, shots.length], [2, 5000, 1]);
  // A config under another slot (a watch begun anew) moves the frame's pictures to it; the old slot is dropped.
  ws.reply({ type: 'video-config', frame: 'f1', slot: 5, codec: 'avc1.42C01F', width: 480, height: 300, css_width: 480, css_height: 300 });
  ws.picture(4, 6000);
  ws.picture(5, 7000);
  assert.deepEqual([agent.info('f1').config.width, agent.info('f1').pictures, agent.info('f1').lastCaptureUs],
    [480, 3, 7000]);
  await agent.close();
});

test('resizeFrame of a watched frame resolves once the video-config of the new size came', async () => {
  const answer = { id: 'f1', url: 'http://127.0.0.1:3000/', state: 'live', width: 240, height: 160, dpr: 2,
    encoded_width: 480, encoded_height: 320, viewers: 1, driver: null, message: null };
  const fetch = async () => new Response(JSON.stringify(answer), { status: 200,
    headers: { 'Content-Type': 'application/json' } });
  const { agent, ws } = await connected({ fetch });
  const watching = agent.watch('f1');
  await ws.next('watch');
  ws.reply({ type: 'video-config', frame: 'f1', slot: 1, codec: 'avc1.42C01F', width: 640, height: 400, css_width: 320, css_height: 200 });
  await watching;
  let done = false;
  const resized = agent.resizeFrame('f1', { width: 240, height: 160 }).then((info) => { done = true; return info; });
  for (let i = 0; i < 20; i += 1) await new Promise((r) => setImmediate(r)); // the HTTP answer is in
  assert.equal(done, false, 'resolved before the new size reached this client');
  ws.reply({ type: 'frame-state', frame: 'f1', state: 'live', url: answer.url, viewers: 1, driver: null }); // not it
  ws.reply({ type: 'video-config', frame: 'f1', slot: 1, codec: 'avc1.42C01F', width: 480, height: 320, css_width: 240, css_height: 160 });
  assert.equal((await resized).encoded_width, 480);
  assert.equal(agent.info('f1').config.width, 480);
  await agent.close();
});

test('a lost socket fails what waits with ConnectionLost; a refused hello is Unauthorized', async () => {
  const { agent, ws } = await connected();
  const step = agent.click('f1', 1, 1);
  await ws.next('input');
  ws.serverClose(1006);
  await assert.rejects(step, ConnectionLost);
  await assert.rejects(agent.click('f1', 1, 1), ConnectionLost);
  await agent.close(); // (before its reconnect: no socket follows)

  const refused = AgentClient.connect('http://127.0.0.1:1', { token: 'forged.token', WebSocket: ScriptedSocket });
  await new Promise((r) => setImmediate(r));
  await ScriptedSocket.last.next('hello');
  ScriptedSocket.last.serverClose(4401, 'bad token');
  await assert.rejects(refused, Unauthorized);
});

test('a silent socket is pinged; one that stays silent is given up: what waits fails with ConnectionLost', async () => {
  const clock = { ms: 0 };
  const { agent, ws } = await connected({ liveness: { idleMs: 30, answerMs: 60 }, now: () => clock.ms });
  const closes = [];
  agent.on('close', (d) => closes.push(d));
  const pongs = [];
  agent.on('*', (m) => pongs.push(m.type));
  clock.ms = 30;
  const ping = await ws.next('ping');
  assert.deepEqual({ ...ping, seen: undefined }, { type: 'ping', seq: 1, seen: undefined });
  ws.reply({ type: 'pong', seq: 1 }); // answered: no second ping until the next silence
  assert.deepEqual(pongs, []); // a pong is not a message for listeners
  const step = agent.click('f1', 1, 1);
  await ws.next('input');
  clock.ms = 200; // the path died: no input-ack, no pong
  await ws.next('ping');
  clock.ms = 260; // an answer time after that ping
  await assert.rejects(step, ConnectionLost);
  assert.equal(closes.length, 1);
  assert.deepEqual({ ...closes[0], reconnectInMs: undefined },
    { code: 1006, reason: 'no answer from the service', reconnectInMs: undefined });
  assert.ok(closes[0].reconnectInMs >= 125 && closes[0].reconnectInMs <= 250, closes[0]); // it comes back by itself
  assert.equal(agent.connected, false);
  ws.serverClose(1006); // the dead socket's own close, much later: told once only
  assert.equal(closes.length, 1);
  await assert.rejects(agent.click('f1', 1, 1), ConnectionLost);
  await agent.close();
});

/** Until the client made a socket after `ws` (failing after 5 s). */
async function madeAfter(ws) {
  const deadline = Date.now() + 5000;
  while (ScriptedSocket.last === ws) {
    assert.ok(Date.now() < deadline, 'no new socket within 5 s');
    await new Promise((r) => setTimeout(r, 1));
  }
}

/** The client's next socket once it made one after `ws`, welcomed; its hello. */
async function reconnected(ws) {
  await madeAfter(ws);
  const next = ScriptedSocket.last;
  const hello = await next.next('hello');
  next.reply({ type: 'welcome', protocol: 1, sandbox: 'unit', shared_frames: true });
  return { next, hello };
}

test('a lost connection comes back by itself: a fresh hello, the same frames watched again, steps work again',
  async () => {
    const { agent, ws, hello } = await connected({ backoff: { baseMs: 5, maxMs: 20 } });
    const events = [];
    agent.on('close', (d) => events.push(['close', d.code, d.reconnectInMs !== null]));
    agent.on('open', (d) => events.push(['open', d.connects]));
    const watching = agent.watch('f1');
    await ws.next('watch');
    ws.reply({ type: 'video-config', frame: 'f1', slot: 1, codec: 'avc1.42e01f', width: 640, height: 400,
      css_width: 320, css_height: 200 });
    await watching;
    agent.watch('f2').catch(() => {}); // not answered before the loss: watched again too
    await ws.next('watch');
    const step = agent.click('f1', 1, 1);
    await ws.next('input');

    ws.serverClose(1011, 'restarting');
    await assert.rejects(step, ConnectionLost); // it may or may not have been applied: the caller decides
    assert.equal(agent.info('f1').config, null); // slots were the lost connection's
    await assert.rejects(agent.click('f1', 1, 1), ConnectionLost); // not connected yet: fails at once
    const back = agent.waitConnected({ timeoutS: 5 });

    const { next, hello: again } = await reconnected(ws);
    await back;
    assert.equal(agent.connected, true);
    assert.equal(agent.connects, 2);
    assert.notEqual(again.token, hello.token); // minted anew (a connection token may have expired meanwhile)
    assert.deepEqual([await next.next('watch'), await next.next('watch')].map((m) => m.frame).sort(), ['f1', 'f2']);
    next.reply({ type: 'video-config', frame: 'f1', slot: 3, codec: 'avc1.42e01f', width: 640, height: 400,
      css_width: 320, css_height: 200 });
    next.picture(3, 1234);
    assert.equal(agent.info('f1').lastCaptureUs, 1234); // pictures count under the new connection's slot
    const after = agent.click('f1', 2, 2);
    const msg = await next.next('input');
    next.reply({ type: 'input-ack', frame: 'f1', seq: msg.seq });
    assert.equal((await after).seq, msg.seq);
    assert.deepEqual(events, [['close', 1011, true], ['open', 2]]);
    await agent.close();
  });

test('watch without video: answered by the frame-state, watched so again after a reconnect, and turned into a ' +
  'watch with pictures by watch() or pictureAfter', async () => {
  const { agent, ws } = await connected({ backoff: { baseMs: 5, maxMs: 20 } });
  const quiet = agent.watch('f1', { video: false });
  assert.deepEqual({ ...(await ws.next('watch')), seen: undefined }, { type: 'watch', frame: 'f1', video: false,
    seen: undefined });
  const state = { type: 'frame-state', frame: 'f1', state: 'paused', url: 'http://127.0.0.1:1/', viewers: 0,
    driver: null };
  ws.reply(state);
  assert.equal((await quiet).state, 'paused');
  assert.equal(agent.info('f1').config, null);
  assert.equal((await agent.watch('f1', { video: false })).state, 'paused'); // already so: nothing sent

  ws.serverClose(1006);
  const { next } = await reconnected(ws);
  assert.equal((await next.next('watch')).video, false);

  const loud = agent.watch('f1');
  const again = await next.next('watch');
  assert.equal(again.video, undefined); // with pictures: the service watches it anew under a new slot
  next.reply({ type: 'video-config', frame: 'f1', slot: 4, codec: 'avc1.42e01f', width: 640, height: 400,
    css_width: 320, css_height: 200 });
  assert.equal((await loud).slot, 4);
  next.picture(4, 99);
  assert.equal(agent.info('f1').lastCaptureUs, 99);
  assert.ok(!next.sent.some((m) => m.type === 'watch' && !m.seen)); // one watch each way, no more
  await agent.close();
});

test('dialogs are tracked per watched frame and answered with answerDialog; page acts on a tab; doubleClick',
  async () => {
    const { agent, ws } = await connected();
    const watching = agent.watch('f1', { video: false });
    await ws.next('watch');
    ws.reply({ type: 'frame-state', frame: 'f1', state: 'live', url: 'http://127.0.0.1:1/', viewers: 0, driver: null });
    await watching;
    const dialog = { type: 'dialog', frame: 'f1', id: 'd3', page: 'p1', kind: 'prompt', message: 'say yes',
      default: 'no' };
    ws.reply(dialog);
    assert.deepEqual(agent.info('f1').dialogs, [dialog]);
    const answered = agent.answerDialog('f1', 'd3', true, { text: 'yes' });
    const answer = await ws.next('dialog-answer');
    assert.deepEqual([answer.id, answer.accept, answer.text], ['d3', true, 'yes']);
    assert.ok(verifyToken(key, answer.grant).step);
    ws.reply({ type: 'input-ack', frame: 'f1', seq: answer.seq });
    await answered;
    ws.reply({ type: 'dialog-closed', frame: 'f1', id: 'd3', reason: 'answered' });
    assert.deepEqual(agent.info('f1').dialogs, []);
    const cancelled = agent.answerDialog('f1', 'd4', false);
    const cancel = await ws.next('dialog-answer');
    assert.equal('text' in cancel, false); // only a prompt's answer carries text
    ws.reply({ type: 'error', code: 'unknown-dialog', message: 'no such dialog', frame: 'f1', seq: cancel.seq });
    await assert.rejects(cancelled, (err) => err.code === 'unknown-dialog');

    const closed = agent.page('f1', 'close', 'p2');
    const page = await ws.next('page');
    assert.deepEqual([page.action, page.page], ['close', 'p2']);
    ws.reply({ type: 'input-ack', frame: 'f1', seq: page.seq });
    await closed;
    const twice = agent.doubleClick('f1', 5, 6);
    const dbl = await ws.next('input');
    assert.deepEqual(dbl.events.filter((e) => e.action !== 'move').map((e) => [e.action, e.clicks]),
      [['down', 1], ['up', 1], ['down', 2], ['up', 2]]);
    ws.reply({ type: 'input-ack', frame: 'f1', seq: dbl.seq });
    await twice;
    await agent.close();
  });

test('a reconnect attempt that errors without a close (undici, refused) is given up at once: the next follows',
  async () => {
    const { agent, ws } = await connected({ backoff: { baseMs: 5, maxMs: 20 }, helloTimeoutMs: 60_000 });
    ws.serverClose(1001, 'shutting down');
    await madeAfter(ws);
    const refused = ScriptedSocket.last;
    refused.fire('error', {}); // and never a close, as Node's WebSocket after ECONNREFUSED
    const { next } = await reconnected(refused);
    await agent.waitConnected({ timeoutS: 5 });
    assert.equal(agent.connects, 2);
    assert.equal(next.readyState, 1);
    await agent.close();
  });

/** Run `body` with the clock stopped (node:test's mock timers): every timer its clients set is mocked, so none is
 * left running after it, and `runTimers()` fires whatever is due within a minute (a reconnect's backoff among them),
 * then lets what they started (an attempt makes its socket after a token's await) happen. */
async function withStoppedClock(body) {
  mock.timers.enable({ apis: ['setTimeout'] });
  try {
    await body(async () => {
      mock.timers.tick(60_000);
      await new Promise((r) => setImmediate(r));
    });
  } finally {
    mock.timers.reset();
  }
}

test('a reconnect whose hello is refused stops there; reconnect:false and close() make none', async () => {
  await withStoppedClock(async (runTimers) => {
    const { agent, ws } = await connected({ backoff: { baseMs: 5, maxMs: 20 } });
    const closes = [];
    agent.on('close', (d) => closes.push(d));
    ws.serverClose(1006);
    await runTimers(); // the backoff's attempt
    const refusedSocket = ScriptedSocket.last;
    assert.notEqual(refusedSocket, ws);
    await refusedSocket.next('hello');
    refusedSocket.serverClose(4401, 'expired token');
    await assert.rejects(agent.waitConnected(), Unauthorized);
    await runTimers();
    assert.equal(ScriptedSocket.last, refusedSocket); // no attempt followed
    assert.equal(closes.at(-1).reconnectInMs, null);
    await assert.rejects(agent.click('f1', 1, 1), Unauthorized);

    const { agent: plain, ws: plainWs } = await connected({ reconnect: false, backoff: { baseMs: 5, maxMs: 5 } });
    const told = [];
    plain.on('close', (d) => told.push(d.reconnectInMs));
    plainWs.serverClose(1006);
    await assert.rejects(plain.waitConnected(), ConnectionLost);
    await runTimers();
    assert.equal(ScriptedSocket.last, plainWs);
    assert.deepEqual(told, [null]);

    const { agent: closing, ws: closingWs } = await connected({ backoff: { baseMs: 30, maxMs: 30, jitter: 0 } });
    closingWs.serverClose(1006); // a reconnect is due in 30 ms...
    await closing.close(); // ...and closing cancels it
    await runTimers();
    assert.equal(ScriptedSocket.last, closingWs);
  });
});
