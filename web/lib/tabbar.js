// The frame's pages as a tab strip (title or URL, the active one marked, a page that stopped answering marked
// "not responding") and, for a driver, a navigation bar: back, forward, reload and an address field. A driver's
// clicks become `page` and `navigate` steps; a view-only viewer sees the same tabs without controls.

import { addressToUrl, pageLabel } from './tabstate.js';

/**
 * @param {Document} doc
 * @param {object} o
 * @param {boolean} o.drive whether this viewer drives (controls shown)
 * @param {(type: string, fields: object) => void} o.step send one driver step (`page` or `navigate`)
 * @returns {{el: HTMLElement, render(tab: import('./tabstate.js').TabState): void}}
 */
export function createTabBar(doc, { drive, step }) {
  const el = doc.createElement('div');
  el.className = 'fs-tabbar';
  const tabs = doc.createElement('div');
  tabs.className = 'fs-tabs';
  tabs.setAttribute('role', 'tablist');
  el.appendChild(tabs);

  let address = null;
  let lastUrl = '';
  if (drive) {
    const nav = doc.createElement('form');
    nav.className = 'fs-nav';
    nav.innerHTML = `
      <button type="button" class="fs-back" title="back" aria-label="back">◀</button>
      <button type="button" class="fs-forward" title="forward" aria-label="forward">▶</button>
      <button type="button" class="fs-reload" title="reload" aria-label="reload">⟳</button>
      <input class="fs-address" type="text" inputmode="url" spellcheck="false" autocomplete="off"
        aria-label="address" placeholder="address">
      <button type="submit" class="fs-go">Go</button>`;
    for (const action of ['back', 'forward', 'reload']) {
      nav.querySelector(`.fs-${action}`).addEventListener('click', () => step('navigate', { action }));
    }
    address = nav.querySelector('.fs-address');
    nav.addEventListener('submit', (e) => {
      e.preventDefault();
      const url = addressToUrl(address.value);
      if (url) step('navigate', { url });
      address.blur();
    });
    address.addEventListener('keydown', (e) => {
      if (e.key === 'Escape') address.blur(); // back to what the frame shows (render() refills it)
    });
    address.addEventListener('blur', () => { address.value = lastUrl; });
    el.appendChild(nav);
  }

  const tabOf = (page) => {
    const t = doc.createElement('div');
    t.className = 'fs-tab';
    t.dataset.page = page.id;
    t.setAttribute('role', 'tab');
    t.setAttribute('aria-selected', page.active ? 'true' : 'false');
    if (page.active) t.dataset.active = '';
    const label = doc.createElement(drive ? 'button' : 'span');
    label.className = 'fs-tab-label';
    label.textContent = pageLabel(page);
    label.title = page.url || '';
    if (drive) {
      label.type = 'button';
      label.addEventListener('click', () => {
        if (!page.active) step('page', { action: 'activate', page: page.id });
      });
    }
    t.appendChild(label);
    if (page.responsive === false) {
      t.dataset.unresponsive = '';
      const hung = doc.createElement('span');
      hung.className = 'fs-tab-hung';
      hung.textContent = 'not responding';
      t.appendChild(hung);
    }
    if (drive) {
      for (const [cls, action, text] of [['fs-tab-reload', 'reload', '⟳'], ['fs-tab-close', 'close', '×']]) {
        const b = doc.createElement('button');
        b.type = 'button';
        b.className = cls;
        b.textContent = text;
        b.title = `${action} this page`;
        b.setAttribute('aria-label', `${action} ${pageLabel(page)}`);
        b.addEventListener('click', () => step('page', { action, page: page.id }));
        t.appendChild(b);
      }
    }
    return t;
  };

  return {
    el,
    render(tab) {
      tabs.replaceChildren(...tab.pages.map(tabOf));
      el.dataset.pages = String(tab.pages.length);
      lastUrl = tab.url;
      // Never overwrite what the driver is typing.
      if (address && doc.activeElement !== address) address.value = tab.url;
    },
  };
}
