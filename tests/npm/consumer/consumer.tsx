// A typed consumer of the installed package: every public name of `framestream`, `framestream/node` and
// `framestream/react`, checked by `tsc --noEmit` (strict). The @ts-expect-error lines prove the types are not
// `any`: each must be an error, or tsc fails.
import {
  connect, FramestreamClient, defaultUrl, webCodecsAvailable, mountFrame, attachInput, mountTabUi, decodeClaims,
  roleOf,
} from 'framestream';
import type {
  ConnectOptions, ClientEventMap, FrameInfo, FrameView, InputHandle, TabUi, TabState, TokenClaims, InputEvent,
  FrameStateMessage, VideoConfigMessage, ControlMessage, ErrorMessage, ServerMessage, ClientMessage, ErrorCode,
  HelpEndedMessage, FrameObject, WatchedFrame, HandoffState, MountFrameOptions, CursorMessage, PageCursor,
} from 'framestream';
import {
  sandboxKey, mintToken, verifyToken, SandboxKey, TokenError, ROLES, MAX_TTL, STEP_MAX_TTL, AgentClient, nowUs,
  pngSize, ClientError, ConnectionLost, ServiceError, Superseded, TakenOver, Forbidden, Unauthorized, Expired,
  RateLimited, UnknownFrame, Replayed, BadInput, BadMessage, Capacity, SharedFramesOff, UnknownPage, UnknownDialog,
  DialogOpen, Unresponsive, Printing, NavigationFailed, errorFor, steps,
} from 'framestream/node';
import type { Step, Screenshot, AgentClientOptions, AgentDownload, GrantSource, WatchInfo } from 'framestream/node';
import { Frame, useFramestreamClient } from 'framestream/react';
import type { FrameProps } from 'framestream/react';
import { createElement, type ReactElement } from 'react';

// --- the browser viewer ---
const options: ConnectOptions = { token: async () => 'token', url: defaultUrl(new URL('https://app.test/x/')) };
const client: FramestreamClient = connect(options);
const off: () => void = client.on('frame-state', (s: FrameStateMessage) => console.log(s.state, s.driver, s.pages?.[0]?.title));
client.on('video-config', (c: VideoConfigMessage) => console.log(c.css_width * 2, c.codec));
client.on('control', (c: ControlMessage) => console.log(c.you, c.held));
client.on('error', (e: ErrorMessage) => console.log(e.code === 'superseded', e.seq));
client.on('close', (d) => console.log(d.reconnectInMs ?? 'for good'));
client.addEventListener('open', (e) => console.log(e.detail.welcome.sandbox));
// @ts-expect-error: a frame-state has no `nope`
client.on('frame-state', (s) => s.nope);
const detail: ClientEventMap['decoder-error'] = { frame: 'f1', error: 'x' };
const canvas = document.createElement('canvas');
const watched: WatchedFrame = client.watch('f1', canvas);
const seq: number | null = client.sendInput('f1', [{ kind: 'mouse', action: 'down', x: 1, y: 2 }], { grant: 'g' });
client.sendStep('f1', 'navigate', { action: 'back' });
// @ts-expect-error: not an input event
client.sendInput('f1', { kind: 'hover', x: 1, y: 2 });
const info: FrameInfo | null = client.info('f1');
const tab: TabState | null = client.tab('f1');
const view: FrameView = mountFrame(client, 'f1', document.body, { showStats: true, title: 'F1' });
// Handing over (issue 27): take over under a fresh token, hand back with a note, who drives and the open request.
const takeOverSeq: Promise<number | null> = client.takeOver('f1');
const releaseSeq: number | null = client.release('f1', 'logged in, over to you');
const handoff: HandoffState | null = client.handoff('f1');
const driverKind: 'agent' | 'person' | null | undefined = handoff?.control?.kind;
const helpReason: string | undefined = handoff?.help?.reason;
// The page's cursor at the driver's pointer: a CSS keyword, kept with who drives.
client.on('cursor', (c: CursorMessage) => { canvas.style.cursor = c.cursor; });
const pageCursor: PageCursor | null | undefined = handoff?.cursor;
// @ts-expect-error: only CSS's keywords, never a url()
const imageCursor: PageCursor = 'url(x.png), pointer';
const mountOptions: MountFrameOptions = { drive: true };
// @ts-expect-error: a note is a string
client.release('f1', 42);
const tabUi: TabUi = mountTabUi(client, view, { drive: false });
const input: InputHandle = attachInput(canvas, { send: (events: InputEvent[]) => client.sendInput('f1', events),
  frameSize: () => ({ width: 640, height: 400 }), busy: () => client.inputInFlight > 16 });
const claims: TokenClaims | null = decodeClaims(client.token);
const role: 'view' | 'drive' | 'control' | null = roleOf(client.token);
const ok: boolean = webCodecsAvailable();
const constructed = new FramestreamClient({ token: 't', pauseWhenHidden: false });
// A hidden page watches without pictures; a canvas is stale until its first picture after.
constructed.setHidden(!constructed.hidden);
constructed.setOffscreen('f1', info?.offscreen === false);
const unpaused: MountFrameOptions = { pauseOffscreen: false };
client.on('stale', (d) => console.log(d.frame, d.stale, info?.stale));
const hiddenWatch: ClientMessage = { type: 'watch', frame: 'f1', video: false };
// @ts-expect-error: video is true or false
const badWatch: ClientMessage = { type: 'watch', frame: 'f1', video: 'no' };
const code: ErrorCode = 'taken-over';
const help: HelpEndedMessage = { type: 'help-ended', frame: 'f1', id: 'h1', outcome: 'answered', note: 'done' };
const message: ServerMessage = help;
const sent: ClientMessage = { type: 'request-help', frame: 'f1', grant: 'g', seq: 1, reason: 'log in' };
console.log(unpaused, hiddenWatch, badWatch, off, detail, watched.tab.pages, seq, info?.decoderState, tab?.activePage, input.sink, claims?.exp, role,
  ok, constructed.state, code, message.type, sent.type, tabUi.destroy);

// --- the app's server ---
async function server(): Promise<void> {
  const key: SandboxKey = sandboxKey('secret', 'sbx1');
  const viewer: string = mintToken(key, { role: 'view', frame: 'f1', sub: 'alice', ttl: 300 });
  // @ts-expect-error: no such role
  mintToken(key, { role: 'admin' });
  const checked = verifyToken(key, viewer);
  const step: boolean = checked.step;
  const grants: GrantSource = (frame: string) => mintToken(key, { role: 'drive', frame, sub: 'agent', step: true });
  const opts: AgentClientOptions = { key, subject: 'agent', grants };
  const agent: AgentClient = await AgentClient.connect('http://127.0.0.1:7682', opts);
  const frames: FrameObject[] = await agent.frames();
  const opened: FrameObject = await agent.openFrame('http://127.0.0.1:3000/', { width: 1280, height: 800 });
  const resized: FrameObject = await agent.resizeFrame(opened.id, { width: 960, height: 600, dpr: 1 });
  await agent.resizeFrame(opened.id, { width: resized.width, height: resized.height });
  // @ts-expect-error: a dpr is 1 or 2
  await agent.resizeFrame(opened.id, { width: 960, height: 600, dpr: 3 });
  // @ts-expect-error: the height is required
  await agent.resizeFrame(opened.id, { width: 960 });
  const clicked: Step = await agent.click(opened.id, 10, 20, { button: 'left' });
  await agent.type(opened.id, 'hello');
  await agent.press(opened.id, 'Control+A');
  await agent.scroll(opened.id, 10, 10, { dy: 120 });
  await agent.drag(opened.id, 0, 0, 100, 100, { moves: 5 });
  await agent.navigate(opened.id, 'back');
  await agent.send(opened.id, steps.chord('Enter'));
  const shot: Screenshot = await agent.pictureAfter(opened.id, clicked.sentUs);
  const still: Screenshot = await agent.settle(opened.id, { quietS: 0.5 });
  const png: Uint8Array = (await agent.screenshot(opened.id)).png;
  const watchInfo: WatchInfo | null = agent.info(opened.id);
  const heard: FrameStateMessage = await agent.watch(opened.id, { video: false }); // events alone: it may pause
  const shown: VideoConfigMessage = await agent.watch(opened.id);
  console.log(heard.state, shown.width);
  for (const d of agent.info(opened.id)?.dialogs ?? []) {
    await agent.answerDialog(opened.id, d.id, d.kind !== 'beforeunload', d.kind === 'prompt' ? { text: 'yes' } : {});
  }
  const newest = (heard.pages ?? []).at(-1);
  if (newest && !newest.active) await agent.page(opened.id, 'close', newest.id);
  // @ts-expect-error: no such page action
  await agent.page(opened.id, 'open', 'p1');
  await agent.doubleClick(opened.id, 10, 10);
  const files: AgentDownload[] = await agent.downloads(opened.id);
  const bytes: Uint8Array = await agent.download(opened.id, files[0]?.id ?? 'd1');
  agent.on('file-chooser', async (m) => {
    const got: string[] = await agent.chooseFiles(m.frame, m.id, [new Blob(['id,value'], { type: 'text/csv' })]);
    console.log(got, m.multiple, m.accept, bytes.byteLength);
  });
  const dropped: string[] = await agent.dropFiles(opened.id, 400, 140, [new File(['hi'], 'hi.txt')]);
  agent.on('help-ended', (m) => console.log(m.outcome, m.note));
  agent.on('close', (d) => console.log(d.code, d.reconnectInMs === null ? 'for good' : `again in ${d.reconnectInMs} ms`));
  agent.on('open', (d) => console.log(`connected (${d.connects})`));
  const back: Promise<void> = agent.waitConnected({ timeoutS: 5 });
  const tries: number = agent.connects;
  const plain: AgentClientOptions = { key, reconnect: false, backoff: { baseMs: 100, maxMs: 2000 } };
  try {
    const note: string | null = await agent.requestHelp(opened.id, 'please log in', { timeoutS: 120 });
    await agent.release(opened.id, note ?? 'nobody came');
  } catch (err) {
    if (err instanceof TakenOver || err instanceof Superseded) console.log(err.code, err.frame, err.seq);
    else if (err instanceof ServiceError) console.log(err.status);
    else if (err instanceof ConnectionLost || err instanceof ClientError || err instanceof TokenError) throw err;
  }
  const typed: ServiceError[] = [new Forbidden('x'), new Unauthorized('x'), new Expired('x'), new RateLimited('x'),
    new UnknownFrame('x'), new Replayed('x'), new BadInput('x'), new BadMessage('x'), new Capacity('x'),
    new SharedFramesOff('x'), new UnknownPage('x'), new UnknownDialog('x'), new DialogOpen('x'),
    new Unresponsive('x'), new Printing('x'), new NavigationFailed('x'), errorFor('taken-over', 'held')];
  console.log(frames.length, still.captureUs, shot.width, png.byteLength, pngSize(png).height, watchInfo?.pictures,
    dropped.length,
    step, typed, ROLES, MAX_TTL.drive, STEP_MAX_TTL, nowUs(), steps.MODIFIER_BITS.Shift);
  await agent.deleteFrame(opened.id, { purge: true });
  await agent.close();
}

// --- React ---
function App({ token }: { token: string }): ReactElement {
  const c = useFramestreamClient({ token, url: 'ws://127.0.0.1:7682/ws' });
  const props: FrameProps = { client: c, frame: 'f1', drive: false, pauseOffscreen: false, onView: (v) => v?.toggleStats(true) };
  return <div><Frame {...props} /><Frame client={c} frame="f2" tabs={false} style={{ width: 320 }} /></div>;
}
// @ts-expect-error: `frame` is required
const missing = <Frame client={null} />;
console.log(server, createElement(App, { token: 't' }), missing);
