// Patch messages (binary kind 2, PROTOCOL.md "Binary patch messages"): a picture's changed rectangles as
// lossless PNG images, sharing the frame's sequence numbering with its H.264 pictures. After the common
// 16-byte header (header.js) the payload is, big-endian:
//   u16 count | count x { u16 x | u16 y | u16 width | u16 height | u8 format | u8 reserved
//   | u32 length | length bytes }
// Format 1 (PNG): the bytes are the rectangle's image. Format 2 (copy, hello feature `copies`): a scroll, the
// 4 bytes are u16 source_x | u16 source_y, and the rectangle is filled from the same-sized one at the source
// in the picture as it stood before the message. At most one copy, and it comes first: drawn in order, it
// then reads the picture before any of the message's PNGs, and only the strip the scroll exposed is an image.
// Parsing is pure (node tests); decoding uses createImageBitmap, which Chromium runs off the main thread.

export const KIND_PATCH = 2;
export const FORMAT_PNG = 1;
export const FORMAT_COPY = 2;
export const FEATURE_PATCHES = 'patches';
export const FEATURE_COPIES = 'copies'; // asked for with FEATURE_PATCHES, never alone
const ENTRY_BYTES = 14;
const COPY_BYTES = 4;

/** A patch payload that could not be parsed. */
export class PatchError extends Error {}

/**
 * The rectangles of a patch message's payload (a Uint8Array), in drawing order.
 * @returns {{x:number, y:number, width:number, height:number, format:number, data:Uint8Array,
 *   source?:{x:number, y:number}}[]} `data` is a view into the same buffer (no copy); a copy (FORMAT_COPY)
 *   also has its `source`.
 */
export function parsePatchPayload(payload) {
  const view = new DataView(payload.buffer, payload.byteOffset, payload.byteLength);
  if (payload.byteLength < 2) throw new PatchError('patch payload shorter than its count');
  const count = view.getUint16(0);
  let offset = 2;
  const rects = [];
  for (let i = 0; i < count; i += 1) {
    if (payload.byteLength < offset + ENTRY_BYTES) throw new PatchError('patch payload cut inside an entry');
    const rect = {
      x: view.getUint16(offset),
      y: view.getUint16(offset + 2),
      width: view.getUint16(offset + 4),
      height: view.getUint16(offset + 6),
      format: view.getUint8(offset + 8),
    };
    const length = view.getUint32(offset + 10);
    offset += ENTRY_BYTES;
    if (rect.format === FORMAT_COPY) {
      if (length !== COPY_BYTES) throw new PatchError(`patch copy rectangle of ${length} bytes, not ${COPY_BYTES}`);
      // Drawn first, a copy reads the picture as it stood before the message; later, it would read its PNGs.
      if (i !== 0) throw new PatchError('patch copy rectangle that is not the first of its message');
    }
    if (payload.byteLength < offset + length) throw new PatchError('patch payload cut inside an image');
    rect.data = payload.subarray(offset, offset + length);
    if (rect.format === FORMAT_COPY) rect.source = { x: view.getUint16(offset), y: view.getUint16(offset + 2) };
    offset += length;
    rects.push(rect);
  }
  if (offset !== payload.byteLength) throw new PatchError('bytes after the last patch rectangle');
  return rects;
}

/**
 * Build a patch payload (tests and fakes). A copy (`format: FORMAT_COPY`) gives its `source: {x, y}`; one
 * without a source has its `data` written as it is (a malformed copy, for tests).
 */
export function encodePatchPayload(rects) {
  const datas = rects.map((r) => (r.format === FORMAT_COPY && r.source ? copyBytes(r.source) : r.data));
  const size = datas.reduce((n, data) => n + ENTRY_BYTES + data.byteLength, 2);
  const out = new Uint8Array(size);
  const view = new DataView(out.buffer);
  view.setUint16(0, rects.length);
  let offset = 2;
  rects.forEach((r, i) => {
    const data = datas[i];
    view.setUint16(offset, r.x);
    view.setUint16(offset + 2, r.y);
    view.setUint16(offset + 4, r.width);
    view.setUint16(offset + 6, r.height);
    view.setUint8(offset + 8, r.format ?? FORMAT_PNG);
    view.setUint32(offset + 10, data.byteLength);
    out.set(data, offset + ENTRY_BYTES);
    offset += ENTRY_BYTES + data.byteLength;
  });
  return out;
}

function copyBytes(source) {
  const data = new Uint8Array(COPY_BYTES);
  const view = new DataView(data.buffer);
  view.setUint16(0, source.x);
  view.setUint16(2, source.y);
  return data;
}

/**
 * Decode every rectangle of one patch message; resolves to [{x, y, width, height, image}] once all are ready
 * (so a picture's patches are drawn together), rejects if any fails. A copy has nothing to decode (its pixels
 * are on the canvas already): it resolves to {x, y, width, height, source} without an image. `decodeImage` is
 * createImageBitmap by default: no colour conversion, so the pixels drawn are the pixels captured.
 */
export async function decodePatches(rects, decodeImage = defaultDecodeImage) {
  const images = await Promise.allSettled(rects.map((r) => {
    if (r.format === FORMAT_COPY) return Promise.resolve(null);
    if (r.format !== FORMAT_PNG) return Promise.reject(new PatchError(`unknown patch format ${r.format}`));
    return decodeImage(r.data);
  }));
  const closeAll = () => { for (const s of images) if (s.status === 'fulfilled') s.value?.close?.(); };
  const failed = images.find((s) => s.status === 'rejected');
  if (failed) {
    closeAll();
    throw failed.reason;
  }
  return rects.map((r, i) => {
    if (r.format === FORMAT_COPY) {
      return { x: r.x, y: r.y, width: r.width, height: r.height, source: { x: r.source.x, y: r.source.y } };
    }
    const image = images[i].value;
    if (image.width !== r.width || image.height !== r.height) {
      closeAll();
      throw new PatchError(`patch image is ${image.width}x${image.height}, its rectangle ${r.width}x${r.height}`);
    }
    return { x: r.x, y: r.y, width: r.width, height: r.height, image };
  });
}

function defaultDecodeImage(data) {
  return createImageBitmap(new Blob([data], { type: 'image/png' }),
    { colorSpaceConversion: 'none', premultiplyAlpha: 'none' });
}

/**
 * Presentation in sequence order: a picture (decoded by the VideoDecoder) or a patch message (decoded by
 * createImageBitmap) is drawn only once everything before it is drawn, so a patch is never drawn under an
 * older picture nor under a newer one. Entries are added in arrival (= sequence) order.
 */
export class PresentQueue {
  constructor(draw) {
    this.draw = draw; // (entry) => void: entry.kind 'video' with entry.frame, or 'patch' with entry.patches
    this.entries = [];
  }

  /** A picture handed to the decoder: its VideoFrame comes through `videoDecoded`. */
  addVideo(captureUs) {
    const entry = { kind: 'video', captureUs, frame: null, ready: false };
    this.entries.push(entry);
    return entry;
  }

  /** A patch message; `done(entry, patches)` or `failed(entry)` when its images are ready. */
  addPatch(captureUs) {
    const entry = { kind: 'patch', captureUs, patches: null, ready: false };
    this.entries.push(entry);
    return entry;
  }

  /** The decoder's next output belongs to the oldest picture still without one. */
  videoDecoded(frame, decodeMs = 0) {
    const waiting = (e) => e.kind === 'video' && !e.ready;
    const entry = this.entries.find((e) => waiting(e) && e.captureUs === frame.timestamp)
      || this.entries.find(waiting);
    if (!entry) {
      frame.close();
      return;
    }
    // The decoder outputs in order: a picture before this one still without output will never get one.
    const at = this.entries.indexOf(entry);
    this.entries = this.entries.filter((e, k) => k >= at || !waiting(e));
    entry.frame = frame;
    entry.decodeMs = decodeMs;
    entry.ready = true;
    this.flush();
  }

  patchReady(entry, patches) {
    if (!this.entries.includes(entry)) {
      for (const p of patches) p.image?.close?.(); // a copy has no image
      return;
    }
    entry.patches = patches;
    entry.ready = true;
    this.flush();
  }

  /** Forget `entry` (its patch failed to decode); what follows is drawn as it becomes ready. */
  drop(entry) {
    const i = this.entries.indexOf(entry);
    if (i >= 0) this.entries.splice(i, 1);
    this.flush();
  }

  flush() {
    while (this.entries.length && this.entries[0].ready) this.draw(this.entries.shift());
  }

  /** Forget everything not yet drawn (the decoder was reset): frames and images are released. */
  clear() {
    for (const e of this.entries) {
      e.frame?.close();
      for (const p of e.patches || []) p.image?.close?.();
    }
    this.entries = [];
  }

  get length() { return this.entries.length; }
}
