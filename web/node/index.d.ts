// framestream/node: types of index.js (hand-written). Needs no DOM and no @types/node.
import type {
  ErrorCode, FrameObject, FrameStateMessage, ControlMessage, DialogMessage, InputEvent, MouseButton, Role,
  ServerMessage, TokenClaims, VideoConfigMessage, WelcomeMessage,
} from '../protocol.js';

export type * from '../protocol.js';

// --- tokens -----------------------------------------------------------------------------------------------------

export const ROLES: readonly Role[];
export const MAX_TTL: Readonly<Record<Role, number>>;
export const STEP_MAX_TTL: number;

/** One sandbox's 32-byte key (HKDF of the secret) and its id. Its bytes never show in JSON or inspect. */
export class SandboxKey {
  constructor(bytes: Uint8Array, sandboxId: string);
  readonly sandboxId: string;
  /** A copy of the key's bytes. */
  readonly bytes: Uint8Array;
  toJSON(): { sandboxId: string };
}

/** HKDF-SHA256(secret, salt "framestream/v1", info sandboxId, 32 bytes): the service's key for the sandbox. */
export function sandboxKey(secret: string | Uint8Array, sandboxId?: string): SandboxKey;

export interface MintOptions {
  role: Role;
  /** A frame id, or `*` (default). */
  frame?: string;
  /** Who: a person's id, or `agent` (default `user`). */
  sub?: string;
  /** Seconds; default and cap: the role's maximum (600 view/control, 120 drive, 30 a step grant). */
  ttl?: number;
  /** An agent's one-step grant (`drive` only). */
  step?: boolean;
  /** Unix seconds (default: now). */
  now?: number;
  /** Default: 16 random base64url characters. */
  jti?: string;
}

/** Sign a token with the service's recipe (docs/protocol.md, "Tokens"). */
export function mintToken(key: SandboxKey, options: MintOptions): string;

/** Verify a token as the service does; its claims, or a TokenError. */
export function verifyToken(key: SandboxKey, token: string, options?: { now?: number }): Required<TokenClaims>;

export class TokenError extends Error {
  readonly code: 'unauthorized' | 'expired';
}

// --- errors -----------------------------------------------------------------------------------------------------

/** Anything the client could not do. */
export class ClientError extends Error {}
/** The WebSocket closed before the service answered (the step may or may not have been applied). */
export class ConnectionLost extends ClientError {}

export interface ServiceErrorOptions {
  code?: string;
  frame?: string | null;
  seq?: number | null;
  status?: number | null;
}

/** The service answered with a contract error code. */
export class ServiceError extends ClientError {
  static readonly code: string;
  constructor(message: string, options?: ServiceErrorOptions);
  readonly code: ErrorCode | (string & {});
  readonly frame: string | null;
  readonly seq: number | null;
  /** The HTTP status, for errors answered over HTTP. */
  readonly status: number | null;
}
/** A newer drive grant (usually a person's) drives the frame: the step was not applied. */
export class Superseded extends ServiceError { readonly code: 'superseded'; }
/** A person holds the frame (handoff): agent steps are refused until they release it. */
export class TakenOver extends ServiceError { readonly code: 'taken-over'; }
export class Forbidden extends ServiceError { readonly code: 'forbidden'; }
export class Unauthorized extends ServiceError { readonly code: 'unauthorized'; }
export class Expired extends ServiceError { readonly code: 'expired'; }
export class RateLimited extends ServiceError { readonly code: 'rate-limited'; }
export class UnknownFrame extends ServiceError { readonly code: 'unknown-frame'; }
export class Replayed extends ServiceError { readonly code: 'replayed'; }
export class BadInput extends ServiceError { readonly code: 'bad-input'; }
export class BadMessage extends ServiceError { readonly code: 'bad-message'; }
export class Capacity extends ServiceError { readonly code: 'capacity'; }
export class SharedFramesOff extends ServiceError { readonly code: 'shared-frames-off'; }
export class UnknownPage extends ServiceError { readonly code: 'unknown-page'; }
export class UnknownDialog extends ServiceError { readonly code: 'unknown-dialog'; }
export class DialogOpen extends ServiceError { readonly code: 'dialog-open'; }
export class Unresponsive extends ServiceError { readonly code: 'unresponsive'; }
/** The page has been printing for 15 s: it takes no input until its print ends. */
export class Printing extends ServiceError { readonly code: 'printing'; }
export class NavigationFailed extends ServiceError { readonly code: 'navigation-failed'; }

/** The typed error for a contract error code (a plain ServiceError for codes without a class). */
export function errorFor(code: string, message: string, options?: Omit<ServiceErrorOptions, 'code'>): ServiceError;

// --- the agent client -------------------------------------------------------------------------------------------

/** A token, or a function minting one when needed. */
export type TokenSource = string | (() => string | Promise<string>);
/** A drive grant for every step, or a function minting one per step for the frame. */
export type GrantSource = string | ((frame: string) => string | Promise<string>);

/** What AgentClient needs of a WebSocket: Node's global one, or the `ws` package's. */
export interface WebSocketLike {
  binaryType: string;
  readonly readyState: number;
  send(data: string): void;
  close(code?: number, reason?: string): void;
  addEventListener(type: 'open' | 'message' | 'close' | 'error', listener: (event: any) => void): void;
}
export type WebSocketConstructor = new (url: string) => WebSocketLike;

export interface ResponseLike {
  readonly status: number;
  readonly statusText: string;
  readonly headers: { get(name: string): string | null };
  json(): Promise<any>;
  arrayBuffer(): Promise<ArrayBuffer>;
}
export type FetchLike = (url: string, init: {
  method: string; headers: Record<string, string>; body?: string;
}) => Promise<ResponseLike>;

export interface AgentClientOptions {
  /** Mint every token when needed: drive (the connection, which then hears file choosers, the page's cursor and
   * downloads, and reads; it drives nothing itself), control (frames), a one-step grant per step. */
  key?: SandboxKey;
  /** The connection's token (view, drive or control) and the HTTP reads'. */
  token?: TokenSource;
  /** The steps' grants. */
  grants?: GrantSource;
  /** The control token for openFrame, resizeFrame and deleteFrame. */
  control?: TokenSource;
  /** The `sub` of minted tokens (default `agent`). */
  subject?: string;
  /** Default: the global WebSocket (Node 22; Node 20 with --experimental-websocket). */
  WebSocket?: WebSocketConstructor;
  /** Default: the global fetch. */
  fetch?: FetchLike;
  helloTimeoutMs?: number;
  /** A socket silent for `idleMs` (default 5000) is sent `ping`; when nothing at all has come `answerMs` (default
   * 10000) after it, the connection is given up: waiting calls fail with ConnectionLost and `close` is emitted with
   * code 1006. */
  liveness?: { idleMs?: number; quietMs?: number; answerMs?: number };
  /** Connect again by itself after a lost connection (default true): a fresh token, the same frames watched again.
   * What waited on the lost connection fails with ConnectionLost, and so does a step sent before it is back. */
  reconnect?: boolean;
  /** Delays between attempts: exponential from `baseMs` (250) to `maxMs` (10000), each random in [d/2, d]. */
  backoff?: { baseMs?: number; maxMs?: number; factor?: number; jitter?: number };
  /** For tests: monotonic milliseconds. */
  now?: () => number;
}

/** A step the service applied: its seq, when it was sent and acknowledged (µs since the epoch, this clock). */
export interface Step {
  frame: string;
  seq: number;
  sentUs: number;
  ackedUs: number;
}

/** A picture as PNG (lossless, at the frame's encoded size), with its capture time (X-Capture-Time-Us). */
export interface Screenshot {
  png: Uint8Array;
  width: number;
  height: number;
  captureUs: number | null;
}

export interface WatchInfo {
  config: VideoConfigMessage | null;
  state: FrameStateMessage | null;
  control: ControlMessage | null;
  /** Pictures (and patches) received. */
  pictures: number;
  /** Capture time of the newest, µs. */
  lastCaptureUs: number;
  /** The page's open dialogs, oldest first (answer one with `answerDialog`). */
  dialogs: DialogMessage[];
}

export interface StepOptions {
  /** A grant for this step (default: one from the client's grants). */
  grant?: string;
  timeoutS?: number;
}

export interface AgentEventMap {
  /** The connection ended; `reconnectInMs` is when the next attempt goes (null: none will, as after close() or a
   * refused token). */
  close: { code: number; reason: string; reconnectInMs: number | null };
  /** Connected again (`connects` counts every welcome, the first included). */
  open: { connects: number };
  'refresh-error': { error: unknown };
}

/** A file the frame's pages downloaded or printed (docs/protocol.md, Downloads). */
export interface AgentDownload {
  id: string;
  name: string;
  size: number;
  state: 'started' | 'done' | 'failed';
}

export class AgentClient {
  /** Connect to the service at its HTTP base (`http://127.0.0.1:7682`) and say hello. */
  static connect(url?: string, options?: AgentClientOptions): Promise<AgentClient>;
  constructor(url: string, options?: AgentClientOptions);
  readonly base: string;
  readonly wsUrl: string;
  readonly welcome: WelcomeMessage | null;
  /** Welcomed on an open socket: steps can go. */
  readonly connected: boolean;
  /** Connections welcomed, the first included. */
  readonly connects: number;
  /** Resolves once connected (at once when it is); rejects when it will not be (closed, its token refused) or after
   * `timeoutS` (30). */
  waitConnected(options?: { timeoutS?: number }): Promise<void>;
  /** Close the socket; what waits fails with ConnectionLost, and no reconnect follows. */
  close(): Promise<void>;
  on<K extends keyof AgentEventMap>(type: K, fn: (detail: AgentEventMap[K]) => void): () => void;
  on<K extends ServerMessage['type']>(type: K, fn: (msg: Extract<ServerMessage, { type: K }>) => void): () => void;
  on(type: '*', fn: (msg: ServerMessage) => void): () => void;

  frames(): Promise<FrameObject[]>;
  frame(frameId: string): Promise<FrameObject>;
  /** Make a frame live (control token) and, unless `watch` is false, watch it until its first picture. */
  openFrame(url: string, options?: { width?: number; height?: number; dpr?: number; watch?: boolean;
    timeoutS?: number }): Promise<FrameObject>;
  /** A new CSS size (control token; `dpr` as openFrame takes it, 2 unless given): in place while the dpr stays
   * (the page keeps its state), else a relaunch at the new size (the page loads again). Resolves, when this client
   * watches the frame, once the `video-config` of the new size came (rejects past `timeoutS`, 30). */
  resizeFrame(frameId: string, size: { width: number; height: number; dpr?: 1 | 2; timeoutS?: number }):
    Promise<FrameObject>;
  deleteFrame(frameId: string, options?: { purge?: boolean }): Promise<void>;
  /** The frame's newest picture as PNG. */
  screenshot(frameId: string): Promise<Screenshot>;

  /** Watch the frame (resuming or reopening it): resolves with its `video-config` once its pictures start. */
  watch(frameId: string, options?: { timeoutS?: number; video?: true }): Promise<VideoConfigMessage>;
  /** Watch the frame for what happens to it alone (state, who drives, dialogs, requests for help): nothing is
   * encoded for this client, and it pauses as a frame nobody views. Resolves with its `frame-state`. */
  watch(frameId: string, options: { timeoutS?: number; video: false }): Promise<FrameStateMessage>;
  unwatch(frameId: string): void;
  info(frameId: string): WatchInfo | null;
  /** A PNG of the frame captured at or after `afterUs` (a step's `sentUs`). */
  pictureAfter(frameId: string, afterUs: number, options?: { timeoutS?: number }): Promise<Screenshot>;
  /** Once the page has not changed for `quietS` (default 0.3 s): its picture as PNG. */
  settle(frameId: string, options?: { quietS?: number; timeoutS?: number }): Promise<Screenshot>;

  step(frameId: string, type: string, fields: Record<string, unknown>, options?: StepOptions): Promise<Step>;
  send(frameId: string, events: InputEvent | InputEvent[], options?: StepOptions): Promise<Step>;
  click(frameId: string, x: number, y: number, options?: { button?: Exclude<MouseButton, 'none'>;
    modifiers?: number; count?: number; grant?: string }): Promise<Step>;
  doubleClick(frameId: string, x: number, y: number, options?: { button?: Exclude<MouseButton, 'none'>;
    modifiers?: number; grant?: string }): Promise<Step>;
  move(frameId: string, x: number, y: number, options?: { grant?: string }): Promise<Step>;
  drag(frameId: string, x0: number, y0: number, x1: number, y1: number, options?: { moves?: number;
    button?: Exclude<MouseButton, 'none'>; grant?: string }): Promise<Step>;
  scroll(frameId: string, x: number, y: number, options?: { dx?: number; dy?: number; modifiers?: number;
    grant?: string }): Promise<Step>;
  /** Typed text (IME text). */
  type(frameId: string, text: string, options?: { grant?: string }): Promise<Step>;
  /** A key or chord: "Enter", "Control+A", "Shift+Tab". */
  press(frameId: string, keys: string, options?: { grant?: string }): Promise<Step>;
  /** A URL, or 'back' | 'forward' | 'reload'; resolves once committed. */
  navigate(frameId: string, target: string, options?: StepOptions): Promise<Step>;
  /** Activate, close or reload one of the frame's pages (ids from `info(id).state.pages`). */
  page(frameId: string, action: 'activate' | 'close' | 'reload', pageId: string, options?: { grant?: string }):
    Promise<Step>;
  /** OK (`accept`) or Cancel a page's open dialog; `text` answers a prompt. */
  answerDialog(frameId: string, dialogId: string, accept: boolean, options?: { text?: string; grant?: string }):
    Promise<Step>;

  /** What the frame's pages downloaded or printed, oldest first (a grant that may drive the frame). */
  downloads(frameId: string, options?: { grant?: string }): Promise<AgentDownload[]>;
  /** A finished download's bytes. */
  download(frameId: string, downloadId: string, options?: { grant?: string }): Promise<Uint8Array>;
  /** Answer a page's open file chooser (its id from `file-chooser`, told to connections that may drive) with these
   * files (`fs.openAsBlob(path)` gives one); the names the page got them under. */
  chooseFiles(frameId: string, chooserId: string, files: Blob[], options?: { grant?: string }): Promise<string[]>;
  /** Drop these files on the frame's active page at (x, y) CSS pixels, as a person's drag from their desktop. */
  dropFiles(frameId: string, x: number, y: number, files: Blob[], options?: { grant?: string }): Promise<string[]>;

  /** Ask a person to take over; their note ('' when none) once answered, null when nobody answered in time. */
  requestHelp(frameId: string, reason: string, options?: { timeoutS?: number; grant?: string }): Promise<string | null>;
  /** Hand the frame back with a note for whoever drives next. */
  release(frameId: string, note?: string, options?: { grant?: string }): Promise<Step>;
}

/** This machine's wall clock, µs since the epoch. */
export function nowUs(): number;
/** A PNG's width and height (from its IHDR). */
export function pngSize(png: Uint8Array): { width: number; height: number };

/** The events of agent steps, as the Python client builds them. */
export namespace steps {
  const BUTTON_BITS: Readonly<Record<Exclude<MouseButton, 'none'>, number>>;
  const MODIFIER_BITS: Readonly<Record<'Alt' | 'Control' | 'Meta' | 'Shift', number>>;
  const MAX_TEXT: number;
  /** A move to (x, y), then `count` presses and releases there (controls that act only once hovered need the move). */
  function click(x: number, y: number, options?: { button?: Exclude<MouseButton, 'none'>; count?: number;
    modifiers?: number }): InputEvent[];
  function move(x: number, y: number, options?: { modifiers?: number }): InputEvent[];
  function drag(x0: number, y0: number, x1: number, y1: number, options?: { moves?: number;
    button?: Exclude<MouseButton, 'none'> }): InputEvent[];
  function scroll(x: number, y: number, options?: { dx?: number; dy?: number; modifiers?: number }): InputEvent[];
  function text(value: string): InputEvent[];
  function parseChord(spec: string): { modifiers: string[]; key: string };
  function chord(spec: string): InputEvent[];
}
