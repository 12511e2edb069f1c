// framestream: the browser viewer (framestream.js and lib/), typed by hand. The API is docs/viewer.md; the
// messages are docs/protocol.md (protocol.d.ts).
import type {
  ClipboardMessage, ControlMessage, DialogClosedMessage, DialogMessage, DownloadMessage, ErrorMessage,
  FileChooserClosedMessage, FileChooserMessage, FrameStateMessage, InputAckMessage, InputEvent, PageInfo, Role,
  TokenClaims, VideoConfigMessage, WelcomeMessage, HelpRequestedMessage, HelpEndedMessage, AgentPointerMessage,
  CursorMessage, PageCursor,
} from './protocol.js';

export type * from './protocol.js';

/** A token, or a function giving a fresh one (called for every (re)connection and refresh). */
export type TokenSource = string | (() => string | Promise<string>);

export interface BackoffOptions {
  baseMs?: number;
  maxMs?: number;
  factor?: number;
  /** The random fraction of each delay: 0.5 gives a delay in [d/2, d]. */
  jitter?: number;
  random?: () => number;
}

export interface ConnectOptions {
  token: TokenSource;
  /** Default: `ws` next to the page (`ws(s)://<page host>/ws`). */
  url?: string;
  /** Reconnect with backoff after a lost connection (default true). */
  reconnect?: boolean;
  backoff?: BackoffOptions;
  /** Set each canvas's CSS width and aspect ratio to the frame's CSS size (default true). */
  sizeCanvas?: boolean;
  /** Take small changes as lossless patches, and scrolls as copies of what the canvas shows (hello `features`
   * `patches` and `copies`; default true). */
  patches?: boolean;
  transport?: 'websocket' | 'webrtc';
  webrtcTimeoutMs?: number;
  iceServers?: RTCIceServer[];
  /** A connection silent for `idleMs` (default 5000) is sent `ping`; nothing at all `quietMs` (2000) after it is
   * the `quiet` event (the view says `Checking connection…`), and `answerMs` (10000) after it the connection is
   * given up (`close` with code 1006) and reconnected. */
  liveness?: { idleMs?: number; quietMs?: number; answerMs?: number };
  /** While the page is hidden, watch every frame without its pictures (`setHidden`; default true). */
  pauseWhenHidden?: boolean;
  /** For tests: another WebSocket constructor. */
  WebSocket?: typeof WebSocket;
}

export type ClientState = 'idle' | 'connecting' | 'open' | 'waiting' | 'closed';

/** Every event of FramestreamClient and its `detail`. */
export interface ClientEventMap {
  open: { welcome: WelcomeMessage };
  close: { code: number; reason: string; reconnectInMs: number | null };
  /** The connection's ping went unanswered for `liveness.quietMs` (true), or a message came after all (false). */
  quiet: { quiet: boolean };
  /** The frame's canvas holds a picture drawn before the connection was lost or the frame was unseen (its page
   * hidden, its view out of sight): true; its first picture since was drawn: false. */
  stale: { frame: string; stale: boolean };
  /** Every frame is now watched without its pictures (true), or with them again (false): `setHidden`. */
  hidden: { hidden: boolean };
  fatal: { code: number; reason: string };
  'frame-state': FrameStateMessage;
  'video-config': VideoConfigMessage;
  control: ControlMessage;
  'input-ack': InputAckMessage;
  error: ErrorMessage;
  dialog: DialogMessage;
  'dialog-closed': DialogClosedMessage;
  'file-chooser': FileChooserMessage;
  'file-chooser-closed': FileChooserClosedMessage;
  download: DownloadMessage;
  clipboard: ClipboardMessage;
  'help-requested': HelpRequestedMessage;
  'help-ended': HelpEndedMessage;
  'agent-pointer': AgentPointerMessage;
  /** Only with a known keyword (another is not passed on). */
  cursor: CursorMessage;
  'decoder-error': { frame: string; error: string; fatal?: boolean };
  'keyframe-request': { frame: string; reason: string };
  'patches-off': { error: unknown };
  'webrtc-fallback': { frame: string; reason: string };
}
export type ClientEventType = keyof ClientEventMap;

export interface FrameStats {
  fps: number;
  kbps: number;
  decodeMs: number | null;
  latencyMs: number | null;
}

export interface LinkInfo {
  kbps: number;
  light: boolean;
  serverKbps: number | null;
  skipped: boolean;
  keyframesOnly: boolean;
}

/** `client.info(frameId)`: counters and statistics of one watched frame. */
export interface FrameInfo {
  frame: string;
  slot: number | null;
  config: VideoConfigMessage | null;
  state: FrameStateMessage | null;
  control: ControlMessage | null;
  waitingForKeyframe: boolean;
  /** The canvas holds a picture drawn before the connection was lost or the frame was unseen (its page hidden, its
   * view out of sight). */
  stale: boolean;
  /** Its view is out of sight: watched without pictures (`setOffscreen`). */
  offscreen: boolean;
  /** The VideoDecoder's state, null when it has none. */
  decoderState: CodecState | null;
  drawn: number;
  decoded: number;
  decoderErrors: number;
  decoderResets: number;
  keyframeRequests: number;
  gaps: number;
  patches: number;
  patchesDrawn: number;
  patchErrors: number;
  dropped: number;
  lastDraw: { captureUs: number; drawnUs: number } | null;
  stats: FrameStats;
  link: LinkInfo;
  transport: 'websocket' | 'webrtc' | 'webrtc-connecting';
  webrtcFallback: string | null;
}

/** `client.tab(frameId)`: what the frame's browser shows and asks. */
export interface TabState {
  pages: PageInfo[];
  url: string;
  dialogs: Map<string, DialogMessage>;
  choosers: Map<string, FileChooserMessage>;
  downloads: Map<string, DownloadMessage>;
  clipboard: { text: string; count: number } | null;
  readonly dialog: DialogMessage | null;
  readonly chooser: FileChooserMessage | null;
  readonly activePage: PageInfo | null;
}

/** `client.handoff(frameId)`: who drives the frame, the agent's open request for help, its last pointer, the
 * page's cursor. */
export interface HandoffState {
  /** The last `control` (null before the first, and after the connection was lost). */
  control: {
    driver: string | null;
    kind: 'agent' | 'person' | null;
    /** A person holds the frame: the agent's steps are refused `taken-over`. */
    held: boolean;
    /** This connection's grant drives. */
    you: boolean;
    sinceUs: number | null;
    /** The note of a driver who handed the frame back. */
    note: string | null;
  } | null;
  /** The open request for help (null when none). */
  help: { id: string; reason: string; subject: string; untilUs: number } | null;
  /** How the last request ended. */
  ended: { id: string; outcome: HelpEndedMessage['outcome']; note: string | null; by: string | null } | null;
  /** Where the agent's last step acted (frame CSS pixels). */
  pointer: { x: number; y: number; action: AgentPointerMessage['action']; subject: string } | null;
  /** The page's last cursor at the driver's pointer (null: none told, or forgotten with its browser or the
   * connection); mountFrame shows it on the canvas while `youDrive`. */
  cursor: PageCursor | null;
  readonly youDrive: boolean;
}

/** A watched frame, as `watch()` returns it. */
export interface WatchedFrame {
  readonly id: string;
  slot: number | null;
  state: FrameStateMessage | null;
  control: ControlMessage | null;
  tab: TabState;
  handoff: HandoffState;
}

export class FramestreamClient extends EventTarget {
  constructor(options: ConnectOptions);
  readonly state: ClientState;
  /** The open connection's `welcome`, or null. */
  readonly welcome: WelcomeMessage | null;
  /** Connections made so far (1 + reconnects). */
  readonly connections: number;
  readonly url: string;
  /** The current connection's token (null before a token function gave one). */
  readonly token: string | null;
  /** Read from the token, not verified (for the UI). */
  readonly claims: TokenClaims | null;
  readonly role: Role | null;
  /** Input steps sent and not yet acknowledged. */
  readonly inputInFlight: number;
  /** Every frame is watched without its pictures (`setHidden`). */
  readonly hidden: boolean;
  open(): void;
  /** Watch every frame without its pictures while `hidden` (called on the page's visibilitychange unless
   * `pauseWhenHidden` is false); with them again when not, each frame `stale` until its first picture. */
  setHidden(hidden: boolean): void;
  /** Watch one frame without its pictures while its view is out of sight, with them again when not. */
  setOffscreen(frameId: string, offscreen: boolean): void;
  /** Close for good. */
  close(): void;
  /** Decode the frame into `canvas` (it gets a 2D context). Callable before the connection is open. */
  watch(frameId: string, canvas: HTMLCanvasElement, options?: { offscreen?: boolean }): WatchedFrame;
  unwatch(frameId: string): void;
  requestKeyframe(frameId: string, reason?: string): void;
  /** One `input` step; the seq, or null when not connected. */
  sendInput(frameId: string, events: InputEvent | InputEvent[], options?: { grant?: string }): number | null;
  /** Any driver step (`page`, `navigate`, `dialog-answer`, `take-over`, `release`...) with grant and seq. */
  sendStep(frameId: string, type: string, fields: Record<string, unknown>, options?: { grant?: string }): number | null;
  /**
   * Take the frame over as a person (a `take-over` step): under a token fresh from the token function when there
   * is one (it then also carries this connection's later steps), else the token. The seq, or null when not
   * connected; answered `input-ack` or an `error` (`superseded`: a newer grant drives).
   */
  takeOver(frameId: string): Promise<number | null>;
  /** Hand the frame back with an optional note (at most 2000 characters; it answers the agent's request for help). */
  release(frameId: string, note?: string): number | null;
  tab(frameId: string): TabState | null;
  /** Who drives, the open request for help, the agent's last pointer, the page's cursor; null when the frame is not
   * watched. */
  handoff(frameId: string): HandoffState | null;
  info(frameId: string): FrameInfo | null;
  /** addEventListener(type, e => fn(e.detail)); returns the function that removes it. */
  on<K extends ClientEventType>(type: K, fn: (detail: ClientEventMap[K]) => void): () => void;
  on(type: string, fn: (detail: any) => void): () => void;
  emit<K extends ClientEventType>(type: K, detail: ClientEventMap[K]): void;
  addEventListener<K extends ClientEventType>(type: K,
    listener: (event: CustomEvent<ClientEventMap[K]>) => void, options?: boolean | AddEventListenerOptions): void;
  addEventListener(type: string, listener: EventListenerOrEventListenerObject | null,
    options?: boolean | AddEventListenerOptions): void;
  removeEventListener<K extends ClientEventType>(type: K,
    listener: (event: CustomEvent<ClientEventMap[K]>) => void, options?: boolean | EventListenerOptions): void;
  removeEventListener(type: string, listener: EventListenerOrEventListenerObject | null,
    options?: boolean | EventListenerOptions): void;
  /** Test hooks (web/lib/debug.js). */
  _debugCorrupt(frameId: string, options?: { wipe?: string }): void;
  _debugDropNext(frameId: string, n?: number): void;
  _debugDropConnection(): void;
  _debugTrace(frameId: string, fn: ((event: Record<string, unknown>) => void) | null): void;
}

/** Open a client (one WebSocket for any number of frames). */
export function connect(options: ConnectOptions): FramestreamClient;

/** The default WebSocket URL: `ws` next to the page. */
export function defaultUrl(location?: Location | URL): string;

/** Whether this browser has WebCodecs (it needs a secure context). */
export function webCodecsAvailable(): boolean;

export interface InputHandle {
  /** The hidden textarea that takes the keyboard (IME, paste). */
  sink: HTMLTextAreaElement;
  releaseAll(): void;
  focus(): void;
  detach(): void;
}

export interface AttachInputOptions {
  /** Called with one or more wire events (one step). */
  send: (events: InputEvent[]) => void;
  /** The frame's CSS size (video-config's css_width/css_height), null while not known. */
  frameSize: () => { width: number; height: number } | null;
  /** True while too much input is unacknowledged: moves and wheel turns wait and coalesce. */
  busy?: () => boolean;
}

/** Capture DOM input on `canvas` as wire events in the frame's CSS pixels. */
export function attachInput(canvas: HTMLCanvasElement, options: AttachInputOptions): InputHandle;

export interface MountFrameOptions {
  showStats?: boolean;
  title?: string;
  /** This viewer may drive (input, Take over, Hand back). Default: the client's token is a drive grant; say it when
   * the token comes from a function (the client knows its token only once the function answered). */
  drive?: boolean;
  /** While the view is out of sight (scrolled or panned away, or not displayed), watch its frame without pictures
   * (`setOffscreen`; default true). */
  pauseOffscreen?: boolean;
}

/** The ready-made frame view of mountFrame. */
export interface FrameView {
  el: HTMLElement;
  canvas: HTMLCanvasElement;
  frameId: string;
  /** Present when the token drives. */
  input: InputHandle | null;
  toggleStats(on?: boolean): boolean;
  /** Full screen on or off (the bar's `full screen` button does the same; needs a user's gesture). Resolves with
   * whether the view is full screen now. A view that drives takes every key there where the browser has the
   * Keyboard Lock API (Chromium): browser shortcuts go to the frame, and Esc is held to leave. */
  toggleFullscreen(): Promise<boolean>;
  toast(text: string, ms?: number): void;
  destroy(): void;
}

/** Build a frame view (canvas, bar, overlays, stats, input when the token drives) into `container`. */
export function mountFrame(client: FramestreamClient, frameId: string, container: HTMLElement,
  options?: MountFrameOptions): FrameView;

export interface TabUi {
  tabbar: { el: HTMLElement };
  dialogs: { el: HTMLElement };
  transfers: { el: HTMLElement };
  destroy(): void;
}

/** Add the tab UI (pages, navigation, dialogs, file choosers, downloads, copied text, and, for a driver, files
 * dragged from the desktop onto the canvas dropped on the page: docs/protocol.md, "Dropped files") to a mountFrame
 * view. */
export function mountTabUi(client: FramestreamClient, view: FrameView, options?: { drive?: boolean }): TabUi;

/** A token's claims, read without verifying (null when it cannot be read). */
export function decodeClaims(token: string | null | undefined): TokenClaims | null;

/** A token's role (null when it cannot be read). */
export function roleOf(token: string | null | undefined): Role | null;
