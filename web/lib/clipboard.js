// Clipboard text both ways, the pure part: what the user's paste becomes on the wire, and how copied text is
// previewed. The DOM side is input.js (paste) and transfers.js (copied text).

import { textEvents } from './keys.js';

// A paste event carries at most 10000 characters (docs/protocol.md, input events) in a message of at most
// 64 KiB; each character may take 6 bytes of JSON (\uXXXX), so this many always fit with the envelope.
export const MAX_PASTE_CHARS = 10000;

/** The wire events of the user's paste: one real paste (the page gets a `paste` event with clipboardData); text
 * too long for one goes as typed text instead, in pieces (the page then gets no paste event, but the text). */
export function pasteEvents(text) {
  if (!text) return [];
  if (Array.from(text).length <= MAX_PASTE_CHARS) return [{ kind: 'paste', text }];
  return textEvents(text);
}

/** A one-line preview of copied text: whitespace runs shown as one space, cut at `max` code points. */
export function clipboardPreview(text, max = 80) {
  const flat = String(text ?? '').replace(/\s+/g, ' ').trim();
  const chars = Array.from(flat);
  return chars.length > max ? `${chars.slice(0, max - 1).join('')}…` : flat;
}
