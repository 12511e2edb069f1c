// The 16-byte video message header (PROTOCOL.md), big-endian:
//   u8 kind (1 = video) | u8 flags (bit 0 keyframe, bit 1 refinement) | u16 slot
//   | u32 sequence | u64 capture time (microseconds since the Unix epoch) | payload (one access unit, Annex B)
// Pure: no DOM, usable from node.

export const HEADER_BYTES = 16;
export const KIND_VIDEO = 1;
export const FLAG_KEYFRAME = 1;
export const FLAG_REFINEMENT = 2;

/** A header that could not be parsed. */
export class HeaderError extends Error {}

function asBytes(data) {
  if (data instanceof Uint8Array) return data;
  if (data instanceof ArrayBuffer) return new Uint8Array(data);
  if (ArrayBuffer.isView(data)) return new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
  throw new HeaderError('binary message must be an ArrayBuffer or a typed array');
}

/**
 * Parse one binary message.
 * @returns {{kind:number, flags:number, keyframe:boolean, refinement:boolean, slot:number,
 *            sequence:number, captureUs:number, payload:Uint8Array}}
 * `payload` is a view into the same buffer (no copy).
 */
export function parseVideoMessage(data) {
  const bytes = asBytes(data);
  if (bytes.byteLength < HEADER_BYTES) {
    throw new HeaderError(`binary message too short: ${bytes.byteLength} bytes, header needs ${HEADER_BYTES}`);
  }
  const view = new DataView(bytes.buffer, bytes.byteOffset, HEADER_BYTES);
  const kind = view.getUint8(0);
  const flags = view.getUint8(1);
  const slot = view.getUint16(2);
  const sequence = view.getUint32(4);
  // A u64 of microseconds since 1970 is about 1.8e15 today: well inside Number's exact range (2^53).
  const captureUs = Number(view.getBigUint64(8));
  return {
    kind,
    flags,
    keyframe: (flags & FLAG_KEYFRAME) !== 0,
    refinement: (flags & FLAG_REFINEMENT) !== 0,
    slot,
    sequence,
    captureUs,
    payload: bytes.subarray(HEADER_BYTES),
  };
}

/** Build a message (used by tests and fakes). */
export function encodeVideoMessage({ kind = KIND_VIDEO, keyframe = false, refinement = false, slot, sequence,
  captureUs, payload = new Uint8Array(0) }) {
  const out = new Uint8Array(HEADER_BYTES + payload.byteLength);
  const view = new DataView(out.buffer);
  view.setUint8(0, kind);
  view.setUint8(1, (keyframe ? FLAG_KEYFRAME : 0) | (refinement ? FLAG_REFINEMENT : 0));
  view.setUint16(2, slot);
  view.setUint32(4, sequence >>> 0);
  view.setBigUint64(8, BigInt(Math.round(captureUs)));
  out.set(payload, HEADER_BYTES);
  return out;
}
