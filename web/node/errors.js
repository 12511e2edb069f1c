// Typed errors for what the service refuses: one class per contract error code (docs/protocol.md, "Errors"), as
// framestream/client/errors.py has them, plus the connection's own.

/** Anything the client could not do. */
export class ClientError extends Error {
  constructor(message) {
    super(message);
    this.name = new.target.name;
  }
}

/** The WebSocket closed before the service answered (the step may or may not have been applied). */
export class ConnectionLost extends ClientError {}

/** The service answered with a contract error `code`. */
export class ServiceError extends ClientError {
  static code = 'internal';

  constructor(message, { code, frame = null, seq = null, status = null } = {}) {
    super(message);
    this.code = code ?? new.target.code;
    this.frame = frame;
    this.seq = seq;
    this.status = status; // the HTTP status, for errors answered over HTTP
  }

  toString() {
    return `${this.name} ${this.code}${this.frame ? ` (frame ${this.frame})` : ''}: ${this.message}`;
  }
}

const make = (code, name) => {
  const cls = class extends ServiceError {
    static code = code;
  };
  Object.defineProperty(cls, 'name', { value: name });
  return cls;
};

/** A newer drive grant (usually a person's) drives the frame: this step was not applied. */
export const Superseded = make('superseded', 'Superseded');
/** A person holds the frame (issue 27's handoff): agent steps are refused until they release it. */
export const TakenOver = make('taken-over', 'TakenOver');
export const Forbidden = make('forbidden', 'Forbidden');
export const Unauthorized = make('unauthorized', 'Unauthorized');
export const Expired = make('expired', 'Expired');
export const RateLimited = make('rate-limited', 'RateLimited');
export const UnknownFrame = make('unknown-frame', 'UnknownFrame');
export const Replayed = make('replayed', 'Replayed');
export const BadInput = make('bad-input', 'BadInput');
export const BadMessage = make('bad-message', 'BadMessage');
export const Capacity = make('capacity', 'Capacity');
export const SharedFramesOff = make('shared-frames-off', 'SharedFramesOff');
export const UnknownPage = make('unknown-page', 'UnknownPage');
export const UnknownDialog = make('unknown-dialog', 'UnknownDialog');
export const DialogOpen = make('dialog-open', 'DialogOpen');
export const Unresponsive = make('unresponsive', 'Unresponsive');
/** The page has been printing for 15 s: it takes no input until its print ends. */
export const Printing = make('printing', 'Printing');
export const NavigationFailed = make('navigation-failed', 'NavigationFailed');

const BY_CODE = new Map([Superseded, TakenOver, Forbidden, Unauthorized, Expired, RateLimited, UnknownFrame,
  Replayed, BadInput, BadMessage, Capacity, SharedFramesOff, UnknownPage, UnknownDialog, DialogOpen, Unresponsive,
  Printing, NavigationFailed].map((cls) => [cls.code, cls]));

/** The typed error for a contract error code (a plain ServiceError for codes without a class). */
export function errorFor(code, message, { frame = null, seq = null, status = null } = {}) {
  const Cls = BY_CODE.get(code) ?? ServiceError;
  return new Cls(message, { code, frame, seq, status });
}

// Close codes after which the connection cannot come back with the same token.
export const FATAL_CLOSE = Object.freeze({ 4401: 'unauthorized', 4403: 'forbidden', 4400: 'bad-message' });
