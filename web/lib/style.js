// A view's stylesheet, added to its document once however many views mount (each module keeps its own id and CSS).

export function ensureStyle(doc, id, css) {
  if (doc.getElementById(id)) return;
  const style = doc.createElement('style');
  style.id = id;
  style.textContent = css;
  doc.head.appendChild(style);
}
