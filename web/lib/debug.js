// Debugging hooks of the client, used by the browser tests (tests/web/test_viewer_*.py call them through
// window.framestream.client): break a frame's decoder, lose pictures as a network would, trace what the viewer
// does with each picture, drop the connection. Mixed into FramestreamClient.prototype by client.js.

/** An IDR slice header that points at a PPS and SPS nobody sent, then noise: no decoder can take it. */
function junkKeyframe() {
  const junk = new Uint8Array(4096);
  junk.set([0, 0, 0, 1, 0x65, 0xff, 0xff, 0xff]);
  for (let i = 8; i < junk.length; i += 1) junk[i] = (i * 131 + 7) & 0xff;
  return junk;
}

export const debugHooks = {
  /**
   * Feed the frame's decoder something that is not H.264, so that it fails and the viewer must recover.
   * With {wipe: CSS colour} the canvas is first painted that colour, so a test can see the picture come back.
   */
  _debugCorrupt(frameId, { wipe } = {}) {
    const video = this.router.get(frameId)?.video;
    if (!video) return false;
    if (wipe && video.ctx) {
      video.ctx.fillStyle = wipe;
      video.ctx.fillRect(0, 0, video.canvas.width, video.canvas.height);
    }
    if (!video.decoder || video.decoder.state !== 'configured') {
      video.failed(new Error('debug: no configured decoder'));
      return true;
    }
    try {
      video.decoder.decode(new EncodedVideoChunk({ type: 'key', timestamp: 0, data: junkKeyframe() }));
      // Some decoders swallow junk silently; flush() makes the error (if any) surface now.
      video.decoder.flush().catch(() => {});
    } catch (err) {
      video.failed(err);
    }
    return true;
  },

  /** Throw away the next n video messages of a frame as if the network lost them (a sequence gap follows). */
  _debugDropNext(frameId, n = 1) {
    const video = this.router.get(frameId)?.video;
    if (video) video.dropNext += n;
  },

  /**
   * Call `fn` for every video message of a frame, before it is decoded ({sequence, keyframe, action, gap,
   * requestKeyframe}; action 'decode', 'drop', or 'lost' for one thrown away by _debugDropNext), and for every
   * picture drawn, after drawing ({drawn: captureUs}). `null` stops it; a new watch starts without one.
   */
  _debugTrace(frameId, fn) {
    const video = this.router.get(frameId)?.video;
    if (video) video.tracer = fn || null;
    return Boolean(video);
  },

  /** Close the socket as if the network dropped (the client reconnects). */
  _debugDropConnection() {
    if (this.transport.ws) this.transport.ws.close(4000, 'debug drop');
  },
};
