// WebRTC for one watched frame (docs/protocol.md, "WebRTC"): the frame's own H.264 pictures arrive over RTP and
// each one the browser decodes is drawn into the frame's canvas. Signalling goes over the client's WebSocket
// (`webrtc-offer` out; `webrtc-answer`, `webrtc-closed` and errors in), and so does everything else (frame-state,
// video-config, input). When ICE does not connect within `connectTimeoutMs`, or the service refuses or closes the
// peer connection, `onFallback` is called once and the client watches the frame over the WebSocket instead.

export const CONNECT_TIMEOUT_MS = 5000;
const GATHER_TIMEOUT_MS = 2000; // candidates are sent in the offer (no trickle): wait this long for them at most
const HAVE_CURRENT_DATA = 2; // HTMLMediaElement.readyState: its current frame can be drawn

/** Whether this browser has WebRTC at all. */
export function webRtcAvailable() {
  return typeof globalThis.RTCPeerConnection === 'function';
}

/** H.264 first in the offer (the service sends nothing else); browsers without setCodecPreferences offer all. */
export function preferH264(transceiver, capabilities = globalThis.RTCRtpReceiver?.getCapabilities?.('video')) {
  if (!capabilities || typeof transceiver.setCodecPreferences !== 'function') return false;
  const h264 = capabilities.codecs.filter((c) => c.mimeType.toLowerCase() === 'video/h264'
    && /packetization-mode=1/.test(c.sdpFmtpLine || ''));
  if (!h264.length) return false;
  const rtx = capabilities.codecs.filter((c) => c.mimeType.toLowerCase() === 'video/rtx');
  transceiver.setCodecPreferences([...h264, ...rtx]);
  return true;
}

function gathered(pc, timeoutMs) {
  if (pc.iceGatheringState === 'complete') return Promise.resolve();
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      pc.removeEventListener('icegatheringstatechange', check);
      resolve();
    };
    const check = () => { if (pc.iceGatheringState === 'complete') done(); };
    const timer = setTimeout(done, timeoutMs);
    pc.addEventListener('icegatheringstatechange', check);
  });
}

export class WebRtcVideo {
  /**
   * @param {object} o
   * @param {string} o.frameId
   * @param {(msg: object) => boolean} o.send a message to the service over the WebSocket
   * @param {() => {canvas: HTMLCanvasElement|null, ctx: CanvasRenderingContext2D|null}} o.target where to draw
   * @param {(reason: string) => void} o.onFallback called once when this frame must go back to the WebSocket
   * @param {() => void} [o.onDrawn] a picture was drawn
   * @param {number} [o.connectTimeoutMs]
   * @param {RTCIceServer[]} [o.iceServers] none by default: host candidates (the service is reachable directly)
   * @param {typeof RTCPeerConnection} [o.RTCPeerConnection] for tests
   * @param {Document} [o.document] for tests
   */
  constructor({ frameId, send, target, onFallback, onDrawn = () => {}, connectTimeoutMs = CONNECT_TIMEOUT_MS,
    iceServers = [], RTCPeerConnection: PC = globalThis.RTCPeerConnection, document: doc = globalThis.document }) {
    Object.assign(this, { frameId, send, target, onFallback, onDrawn, connectTimeoutMs, iceServers, PC, doc });
    this.pc = null;
    this.video = null;
    this.timer = null;
    this.state = 'idle'; // idle | offered | connected | closed
    this.fellBack = null; // the reason, once it fell back
    this.drawn = 0;
  }

  /** Offer a receive-only video section with every candidate gathered, and start the connect timer. */
  async start() {
    const pc = this.pc = new this.PC({ iceServers: this.iceServers });
    preferH264(pc.addTransceiver('video', { direction: 'recvonly' }));
    pc.ontrack = (e) => this.attach(e.streams[0] || new MediaStream([e.track]));
    pc.onconnectionstatechange = () => this.onConnectionState(pc.connectionState);
    this.timer = setTimeout(() => this.fallback('ice-timeout'), this.connectTimeoutMs);
    try {
      await pc.setLocalDescription(await pc.createOffer());
      await gathered(pc, GATHER_TIMEOUT_MS);
    } catch (err) {
      this.fallback(`offer-failed: ${err}`);
      return;
    }
    if (this.state === 'closed') return;
    this.state = 'offered';
    if (!this.send({ type: 'webrtc-offer', frame: this.frameId, sdp: pc.localDescription.sdp })) {
      this.fallback('not-connected');
    }
  }

  onConnectionState(state) {
    if (state === 'connected' && this.state !== 'closed') {
      this.state = 'connected';
      clearTimeout(this.timer);
    } else if (state === 'failed') {
      this.fallback('failed');
    }
  }

  /** A message of the service about this frame; true when it was this module's. */
  onMessage(msg) {
    if (msg.type === 'webrtc-answer') {
      this.pc?.setRemoteDescription({ type: 'answer', sdp: msg.sdp })
        .catch((err) => this.fallback(`bad-answer: ${err}`));
      return true;
    }
    if (msg.type === 'webrtc-closed') {
      this.fallback(msg.reason || 'closed');
      return true;
    }
    // An offer refused (bad-message, capacity...): the frame is no longer watched; back to the WebSocket.
    if (msg.type === 'error' && msg.seq === undefined && this.state === 'offered') {
      this.fallback(msg.code);
      return false; // still an error the application may want to hear of
    }
    return false;
  }

  attach(stream) {
    if (this.state === 'closed' || !this.doc) return;
    const video = this.video = this.doc.createElement('video');
    video.muted = true;
    video.playsInline = true;
    video.srcObject = stream;
    const paint = () => {
      if (this.video !== video) return;
      const { canvas, ctx } = this.target();
      // A frame's callback may come before the element says it holds the frame (readyState 0, seen in Chromium
      // on a busy machine): drawImage then draws nothing, and a view told `drawn` would lift its overlay from a
      // blank canvas. `loadeddata` paints it once it does.
      if (canvas && ctx && video.videoWidth && video.readyState >= HAVE_CURRENT_DATA) {
        // The canvas keeps the size of video-config; the picture is that size too.
        ctx.drawImage(video, 0, 0, canvas.width, canvas.height);
        this.drawn += 1;
        this.onDrawn();
      }
    };
    const onFrame = () => {
      paint();
      if (this.video === video) video.requestVideoFrameCallback(onFrame);
    };
    video.requestVideoFrameCallback(onFrame);
    video.addEventListener('loadeddata', paint);
    video.play().catch(() => {}); // muted video may always play; a refusal leaves the timer to fall back
  }

  /** Give up on WebRTC for this frame (once): close and tell the client. */
  fallback(reason) {
    if (this.state === 'closed') return;
    this.fellBack = reason;
    this.close();
    this.onFallback(reason);
  }

  close() {
    this.state = 'closed';
    clearTimeout(this.timer);
    if (this.video) {
      this.video.srcObject = null;
      this.video = null;
    }
    if (this.pc) {
      try { this.pc.close(); } catch { /* already closed */ }
    }
  }
}
