// The wire messages of docs/protocol.md (protocol version 1), as TypeScript types. Hand-written; the contract
// grows by adding fields, so every message may carry fields not listed here.

export type Role = 'view' | 'drive' | 'control';

/** A token's claims (docs/protocol.md, "Tokens"). */
export interface TokenClaims {
  v: 1;
  sbx: string;
  /** A frame id, or `*` for every frame. */
  frm: string;
  role: Role;
  sub: string;
  /** Issued at, unix seconds. */
  iat: number;
  /** Expires at, unix seconds. */
  exp: number;
  jti: string;
  /** An agent's one-step grant. */
  step?: boolean;
}

export type ErrorCode =
  | 'bad-message' | 'unknown-frame' | 'unauthorized' | 'expired' | 'forbidden' | 'replayed' | 'superseded'
  | 'capacity' | 'shared-frames-off' | 'bad-input' | 'rate-limited' | 'internal' | 'page-limit'
  | 'url-not-allowed' | 'unknown-page' | 'unknown-dialog' | 'unknown-file-chooser' | 'dialog-open'
  | 'unresponsive' | 'printing' | 'navigation-failed' | 'unknown-download' | 'taken-over';

/** CDP modifier mask: Alt 1, Ctrl 2, Meta 4, Shift 8. */
export type Modifiers = number;
export type MouseButton = 'left' | 'middle' | 'right' | 'back' | 'forward' | 'none';

export interface MouseEvent {
  kind: 'mouse';
  action: 'move' | 'down' | 'up';
  x: number;
  y: number;
  button?: MouseButton;
  /** DOM mask of the buttons held: left 1, right 2, middle 4, back 8, forward 16. */
  buttons?: number;
  clicks?: number;
  modifiers?: Modifiers;
}
export interface WheelEvent {
  kind: 'wheel';
  x: number;
  y: number;
  dx: number;
  dy: number;
  modifiers?: Modifiers;
}
export interface KeyEvent {
  kind: 'key';
  action: 'down' | 'up';
  /** DOM KeyboardEvent.key */
  key: string;
  /** DOM KeyboardEvent.code ('' or absent: derived from key) */
  code?: string;
  modifiers?: Modifiers;
  repeat?: boolean;
}
export interface TextEvent {
  kind: 'text';
  text: string;
}
export interface PasteEvent {
  kind: 'paste';
  text: string;
}
export interface TouchPoint {
  id: number;
  x: number;
  y: number;
}
export interface TouchEvent {
  kind: 'touch';
  action: 'start' | 'move' | 'end' | 'cancel';
  points?: TouchPoint[];
}
/** One input event, in the frame's CSS pixels. */
export type InputEvent = MouseEvent | WheelEvent | KeyEvent | TextEvent | PasteEvent | TouchEvent;

// --- client to server -------------------------------------------------------------------------------------------

export interface HelloMessage {
  type: 'hello';
  token: string;
  /** Known: `patches` (binary patch messages, kind 2), `copies` (their format 2, a scroll; only with `patches`).
   * The service ignores names it does not know. */
  features?: string[];
}
export interface RefreshMessage {
  type: 'refresh';
  token: string;
}
export interface WatchMessage {
  type: 'watch' | 'unwatch' | 'keyframe';
  frame: string;
  /** `watch` only: false watches the frame's events without its pictures (a hidden page); default true. */
  video?: boolean;
}
/** Is the connection alive? Answered at once with `pong` (same `seq`, an integer 0..2^53-1, when given). */
export interface PingMessage {
  type: 'ping';
  seq?: number;
}
/** The envelope of every driver step: answered `input-ack` or an `error` with the same `seq`. */
export interface StepEnvelope {
  frame: string;
  grant: string;
  seq: number;
}
export interface InputMessage extends StepEnvelope {
  type: 'input';
  event?: InputEvent;
  events?: InputEvent[];
}
export interface PageMessage extends StepEnvelope {
  type: 'page';
  action: 'activate' | 'close' | 'reload';
  page: string;
}
export interface NavigateMessage extends StepEnvelope {
  type: 'navigate';
  url?: string;
  action?: 'back' | 'forward' | 'reload';
}
export interface DialogAnswerMessage extends StepEnvelope {
  type: 'dialog-answer';
  id: string;
  accept: boolean;
  text?: string;
}
/** Handoff (issue 27): a person's drive grant takes the frame without input. */
export interface TakeOverMessage extends StepEnvelope {
  type: 'take-over';
}
/** Handoff: the driver hands the frame back (note at most 2000 characters). */
export interface ReleaseMessage extends StepEnvelope {
  type: 'release';
  note?: string;
}
/** Handoff: an agent (step grant) asks a person to take over; reason 1..500 characters, timeout_s 1..3600. */
export interface RequestHelpMessage extends StepEnvelope {
  type: 'request-help';
  reason: string;
  timeout_s?: number;
}
export type ClientMessage =
  | HelloMessage | RefreshMessage | WatchMessage | PingMessage | InputMessage | PageMessage | NavigateMessage
  | DialogAnswerMessage | TakeOverMessage | ReleaseMessage | RequestHelpMessage;

// --- server to client -------------------------------------------------------------------------------------------

export interface WelcomeMessage {
  type: 'welcome';
  protocol: 1;
  sandbox: string;
  shared_frames: boolean;
  /** The hello features granted (`patches`, `copies`). */
  features?: string[];
}
export interface VideoConfigMessage {
  type: 'video-config';
  frame: string;
  slot: number;
  /** The WebCodecs codec string, `avc1.42C0LL`. */
  codec: string;
  /** Encoded pixels. */
  width: number;
  height: number;
  /** The coordinate space of input events. */
  css_width: number;
  css_height: number;
  /** Only on the light stream. */
  stream?: 'light';
  link_kbps?: number;
}
export type FrameStateName = 'launching' | 'live' | 'paused' | 'closed' | 'error';
export interface PageInfo {
  id: string;
  url: string;
  title: string;
  active: boolean;
  responsive: boolean;
}
export interface FrameStateMessage {
  type: 'frame-state';
  frame: string;
  state: FrameStateName;
  url: string;
  viewers: number;
  driver: string | null;
  message?: string;
  pages?: PageInfo[];
  /** Extension: the frame's CSS size (its pictures' css_width and css_height). */
  width?: number;
  height?: number;
}
export interface ControlMessage {
  type: 'control';
  frame: string;
  driver: string | null;
  you: boolean;
  /** Handoff: `agent` when a step grant drives, `person` otherwise. */
  kind?: 'agent' | 'person' | null;
  since_us?: number | null;
  /** Handoff: a person holds the frame; agent steps are refused `taken-over`. */
  held?: boolean;
  note?: string;
}
export interface InputAckMessage {
  type: 'input-ack';
  frame: string;
  seq: number;
}
export interface ErrorMessage {
  type: 'error';
  code: ErrorCode | (string & {});
  message: string;
  frame?: string;
  seq?: number;
}
export interface DialogMessage {
  type: 'dialog';
  frame: string;
  id: string;
  page: string;
  kind: 'alert' | 'confirm' | 'prompt' | 'beforeunload';
  message: string;
  default: string;
}
export interface DialogClosedMessage {
  type: 'dialog-closed';
  frame: string;
  id: string;
  reason: 'answered' | 'timeout' | 'closed';
}
export interface FileChooserMessage {
  type: 'file-chooser';
  frame: string;
  id: string;
  page: string;
  multiple: boolean;
  accept: string[];
}
export interface FileChooserClosedMessage {
  type: 'file-chooser-closed';
  frame: string;
  id: string;
}
export interface DownloadMessage {
  type: 'download';
  frame: string;
  id: string;
  name: string;
  size: number;
  state: 'started' | 'done' | 'failed';
}
export interface ClipboardMessage {
  type: 'clipboard';
  frame: string;
  text: string;
}
export interface HelpRequestedMessage {
  type: 'help-requested';
  frame: string;
  id: string;
  reason: string;
  subject: string;
  until_us: number;
}
export interface HelpEndedMessage {
  type: 'help-ended';
  frame: string;
  id: string;
  outcome: 'answered' | 'timeout' | 'cancelled';
  note?: string;
  by?: string;
}
export interface AgentPointerMessage {
  type: 'agent-pointer';
  frame: string;
  x: number;
  y: number;
  action: 'click' | 'down' | 'up' | 'move' | 'wheel' | 'touch';
  subject: string;
}
/** The CSS cursor keywords a `cursor` message carries (the viewer ignores any other). */
export type PageCursor =
  | 'default' | 'none' | 'context-menu' | 'help' | 'pointer' | 'progress' | 'wait' | 'cell' | 'crosshair' | 'text'
  | 'vertical-text' | 'alias' | 'copy' | 'move' | 'no-drop' | 'not-allowed' | 'grab' | 'grabbing' | 'e-resize'
  | 'n-resize' | 'ne-resize' | 'nw-resize' | 's-resize' | 'se-resize' | 'sw-resize' | 'w-resize' | 'ew-resize'
  | 'ns-resize' | 'nesw-resize' | 'nwse-resize' | 'col-resize' | 'row-resize' | 'all-scroll' | 'zoom-in'
  | 'zoom-out';
/** The page's cursor at the driver's pointer, to viewers that may drive the frame: when it changes, and on
 * watching when it is not `default`. */
export interface CursorMessage {
  type: 'cursor';
  frame: string;
  cursor: PageCursor;
}
export interface WebRtcAnswerMessage {
  type: 'webrtc-answer';
  frame: string;
  sdp: string;
}
export interface WebRtcClosedMessage {
  type: 'webrtc-closed';
  frame: string;
  reason: 'failed' | 'stalled';
}
/** The answer to `ping`. */
export interface PongMessage {
  type: 'pong';
  seq?: number;
}
export type ServerMessage =
  | PongMessage | WelcomeMessage | VideoConfigMessage | FrameStateMessage | ControlMessage | InputAckMessage | ErrorMessage
  | DialogMessage | DialogClosedMessage | FileChooserMessage | FileChooserClosedMessage | DownloadMessage
  | ClipboardMessage | HelpRequestedMessage | HelpEndedMessage | AgentPointerMessage | CursorMessage
  | WebRtcAnswerMessage | WebRtcClosedMessage;

/** A frame object of `GET /frames`. */
export interface FrameObject {
  id: string;
  url: string;
  state: FrameStateName;
  width: number;
  height: number;
  dpr: number;
  /** The picture's size in pixels: the CSS size at the dpr, within 2560x1600. */
  encoded_width: number;
  encoded_height: number;
  viewers: number;
  driver: string | null;
  /** Why the frame is in its state (a launch's reason, a crash's), or null. */
  message: string | null;
}

/** The 16-byte header of a binary message (`>BBHIQ`). */
export interface VideoHeader {
  /** 1 video, 2 patch, 3 padding. */
  kind: number;
  /** bit 0 keyframe, bit 1 refinement. */
  flags: number;
  slot: number;
  sequence: number;
  /** Capture time, µs since the Unix epoch. */
  captureUs: number;
}
