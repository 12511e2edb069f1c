// Which watched frame a message is for. JSON messages name their frame; video messages carry only a slot,
// which the service gives in each watch's `video-config` and which holds for one connection only. Each frame's
// last `frame-state` and `control` are kept here for info(), what its browser shows and asks (tabstate.js), and
// who drives it, an open request for help, the agent's last pointer and the page's cursor (handoff.js).

import { parseVideoMessage, KIND_VIDEO } from './header.js';
import { TabState, TAB_MESSAGES } from './tabstate.js';
import { HandoffState, HANDOFF_MESSAGES } from './handoff.js';
import { pageCursor } from './pagecursor.js';
import { KIND_PATCH } from './patches.js';

/** One watched frame: its slot on this connection, its last state and control messages, and its decoder. */
export class WatchedFrame {
  /**
   * @param {string} id
   * @param {import('./decoder.js').FrameDecoder} video
   */
  constructor(id, video) {
    this.id = id;
    this.video = video;
    this.slot = null;
    this.offscreen = false; // its view is out of sight: watched without pictures (client.setOffscreen)
    this.state = null; // last frame-state message
    this.control = null; // last control message
    this.tab = new TabState(); // its pages, dialogs, file choosers, downloads, copied text
    this.handoff = new HandoffState(); // who drives, the open request for help, the agent's last pointer
  }

  info() {
    const video = this.video.info();
    return { frame: this.id, slot: this.slot, config: video.config, state: this.state, control: this.control,
      offscreen: this.offscreen, ...video };
  }
}

export class Router {
  constructor() {
    this.frames = new Map(); // frame id -> WatchedFrame
    this.slots = new Map(); // slot -> WatchedFrame (this connection's)
  }

  get(frameId) {
    return this.frames.get(frameId);
  }

  add(frame) {
    this.frames.set(frame.id, frame);
  }

  /** Stop routing to a frame; returns it (or undefined when it was not watched). */
  remove(frameId) {
    const frame = this.frames.get(frameId);
    if (!frame) return undefined;
    this.frames.delete(frameId);
    if (frame.slot !== null) this.slots.delete(frame.slot);
    return frame;
  }

  /**
   * One JSON message from the service (not `welcome`): record what it says about its frame.
   * @returns {boolean} whether to pass it on to the client's listeners (not a video-config of a frame we
   *   no longer watch, nor a `cursor` that is not a known keyword)
   */
  route(msg) {
    const frame = msg.frame !== undefined ? this.frames.get(msg.frame) : undefined;
    switch (msg.type) {
      case 'video-config':
        if (!frame) return false;
        if (frame.slot !== null && frame.slot !== msg.slot) this.slots.delete(frame.slot);
        frame.slot = msg.slot;
        frame.video.configure(msg);
        this.slots.set(msg.slot, frame);
        return true;
      case 'frame-state':
        if (frame) {
          frame.state = msg;
          frame.video.reserve(msg.width, msg.height); // its place on the page, before its first video-config
          frame.tab.apply(msg);
          frame.handoff.apply(msg); // a browser that stopped takes its page's cursor along
        }
        return true;
      case 'cursor':
        // Listeners never get a cursor that is not one of the keywords (it could end up in a style).
        if (pageCursor(msg.cursor) === null) return false;
        frame?.handoff.apply(msg);
        return true;
      case 'control':
        if (frame) {
          frame.control = msg;
          frame.handoff.apply(msg);
        }
        return true;
      default:
        if (frame && TAB_MESSAGES.has(msg.type)) frame.tab.apply(msg);
        if (frame && HANDOFF_MESSAGES.has(msg.type)) frame.handoff.apply(msg);
        return true;
    }
  }

  /** One binary message: a video or patch message goes to the frame of its slot; anything else is ignored. */
  routeBinary(data) {
    let pic;
    try {
      pic = parseVideoMessage(data);
    } catch {
      return;
    }
    if (pic.kind !== KIND_VIDEO && pic.kind !== KIND_PATCH) return; // future kinds: ignore
    const frame = this.slots.get(pic.slot);
    if (!frame) return;
    if (pic.kind === KIND_PATCH) frame.video.onPatch(pic, data.byteLength);
    else frame.video.onPicture(pic, data.byteLength);
  }

  /** The connection is gone: its slots mean nothing, and every frame waits for a keyframe again. */
  disconnected() {
    this.slots.clear();
    for (const frame of this.frames.values()) {
      frame.slot = null;
      frame.video.reset();
      frame.tab.connectionLost();
      frame.handoff.connectionLost();
    }
  }

  dispose() {
    for (const frame of this.frames.values()) frame.video.dispose();
  }
}
