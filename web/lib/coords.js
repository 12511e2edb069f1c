// Mapping a pointer position on the page to the frame's CSS pixels, whatever size the canvas is displayed at.
// Pure: the caller passes the canvas's content box (from getBoundingClientRect minus border and padding).

/**
 * The content box of an element from its border box and computed border/padding widths (all CSS px).
 * @param {{left:number, top:number, width:number, height:number}} rect getBoundingClientRect()
 * @param {{borderLeft?:number, borderTop?:number, borderRight?:number, borderBottom?:number,
 *          paddingLeft?:number, paddingTop?:number, paddingRight?:number, paddingBottom?:number}} edges
 */
export function contentBox(rect, edges = {}) {
  const e = (k) => Number(edges[k]) || 0;
  const left = rect.left + e('borderLeft') + e('paddingLeft');
  const top = rect.top + e('borderTop') + e('paddingTop');
  const width = Math.max(0, rect.width - e('borderLeft') - e('paddingLeft') - e('borderRight') - e('paddingRight'));
  const height = Math.max(0, rect.height - e('borderTop') - e('paddingTop') - e('borderBottom') - e('paddingBottom'));
  return { left, top, width, height };
}

/**
 * Where the picture lies inside the content box.
 * fit 'fill' stretches the picture over the whole box (the canvas default); 'contain' keeps its aspect ratio
 * and centres it (CSS object-fit: contain, letterboxing); 'none' draws it at its CSS size, centred
 * (object-position defaults to 50% 50%).
 */
export function pictureBox(box, frameWidth, frameHeight, fit = 'fill') {
  if (fit === 'contain' || fit === 'scale-down' || fit === 'none') {
    let scale = Math.min(box.width / frameWidth, box.height / frameHeight);
    if (fit === 'none' || (fit === 'scale-down' && scale > 1)) scale = 1;
    const width = frameWidth * scale;
    const height = frameHeight * scale;
    return { left: box.left + (box.width - width) / 2, top: box.top + (box.height - height) / 2, width, height };
  }
  return { ...box };
}

function clamp(v, lo, hi) {
  return Math.min(hi, Math.max(lo, v));
}

/** Round to 1/100 of a CSS pixel: enough for dpr 2 and keeps messages short. */
function round2(v) {
  return Math.round(v * 100) / 100;
}

/**
 * Map a client (viewport) position to the frame's CSS pixels.
 * @returns {{x:number, y:number, inside:boolean}} x in [0, frameWidth - 0.01], y likewise; `inside` tells
 *   whether the point was on the picture before clamping.
 */
export function mapToFrame(clientX, clientY, box, frameWidth, frameHeight, fit = 'fill') {
  const pic = pictureBox(box, frameWidth, frameHeight, fit);
  if (!(pic.width > 0 && pic.height > 0 && frameWidth > 0 && frameHeight > 0)) {
    return { x: 0, y: 0, inside: false };
  }
  const fx = ((clientX - pic.left) / pic.width) * frameWidth;
  const fy = ((clientY - pic.top) / pic.height) * frameHeight;
  const inside = fx >= 0 && fy >= 0 && fx < frameWidth && fy < frameHeight;
  return {
    x: clamp(round2(fx), 0, frameWidth - 0.01),
    y: clamp(round2(fy), 0, frameHeight - 0.01),
    inside,
  };
}

/**
 * The inverse of mapToFrame: where a point in the frame's CSS pixels lies on the page (client/viewport
 * coordinates), through the same picture box, so an overlay drawn there sits over what the input mapping would
 * hit. Not clamped: a point outside the frame lies outside the picture.
 * @returns {{x:number, y:number}}
 */
export function frameToClient(x, y, box, frameWidth, frameHeight, fit = 'fill') {
  const pic = pictureBox(box, frameWidth, frameHeight, fit);
  if (!(frameWidth > 0 && frameHeight > 0)) return { x: pic.left, y: pic.top };
  return { x: pic.left + (x / frameWidth) * pic.width, y: pic.top + (y / frameHeight) * pic.height };
}

/** Scale a wheel delta to pixels: DOM deltaMode 0 = pixels, 1 = lines, 2 = pages. */
export function wheelPixels(delta, deltaMode, { lineHeight = 40, pageHeight = 800 } = {}) {
  if (deltaMode === 1) return delta * lineHeight;
  if (deltaMode === 2) return delta * pageHeight;
  return delta;
}
