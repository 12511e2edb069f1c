// web/lib/fullscreen.js against a scripted document: the button's label, the keyboard sink moved into the view and
// focused, Keyboard Lock only for a view that drives and only while full screen (also when the lock's answer comes
// after the view left full screen), a refusal said, and no button where full screen cannot be had.

import { test } from 'node:test';
import assert from 'node:assert/strict';

import { LOCKED_TEXT, UNLOCKED_TEXT, mountFullscreen } from '../../web/lib/fullscreen.js';

class Node {
  constructor(doc, name) {
    Object.assign(this, { ownerDocument: doc, name, parentNode: null, children: [], listeners: {}, attrs: {},
      hidden: false, textContent: '' });
  }
  appendChild(child) {
    if (child.parentNode) child.parentNode.children = child.parentNode.children.filter((c) => c !== child);
    child.parentNode = this;
    this.children.push(child);
    return child;
  }
  addEventListener(type, fn) { (this.listeners[type] ??= []).push(fn); }
  removeEventListener(type, fn) { this.listeners[type] = (this.listeners[type] ?? []).filter((f) => f !== fn); }
  setAttribute(k, v) { this.attrs[k] = v; }
  click() { for (const fn of this.listeners.click ?? []) fn(); }
}

/** A document whose full screen and Keyboard Lock do as a browser would, or refuse (`refuse`). */
function scripted({ lock = true, refuse = null, enabled = true, lockAnswer = null } = {}) {
  const calls = [];
  const doc = { fullscreenEnabled: enabled, fullscreenElement: null, listeners: {} };
  const change = async () => {
    await Promise.resolve();
    for (const fn of doc.listeners.fullscreenchange ?? []) await fn();
  };
  doc.addEventListener = (type, fn) => { (doc.listeners[type] ??= []).push(fn); };
  doc.removeEventListener = (type, fn) => {
    doc.listeners[type] = (doc.listeners[type] ?? []).filter((f) => f !== fn);
  };
  doc.exitFullscreen = async () => { calls.push('exit'); doc.fullscreenElement = null; await change(); };
  const keyboard = lock ? {
    lock: () => { calls.push('lock'); return lockAnswer ?? Promise.resolve(); },
    unlock: () => { calls.push('unlock'); },
  } : undefined;
  doc.defaultView = { navigator: { keyboard } };
  const body = new Node(doc, 'body');
  const el = new Node(doc, 'view');
  el.requestFullscreen = async (options) => {
    calls.push(`request ${options.navigationUI}`);
    if (refuse) throw new TypeError(refuse);
    doc.fullscreenElement = el;
    await change();
  };
  const button = new Node(doc, 'button');
  const sink = body.appendChild(new Node(doc, 'sink'));
  const toasts = [];
  const input = { sink, focus: () => calls.push(`focus in ${sink.parentNode.name}`) };
  return { doc, el, button, sink, body, calls, toasts, input, toast: (text) => toasts.push(text) };
}

const settle = () => new Promise((r) => setTimeout(r, 0));

test('a driver: full screen moves the keyboard sink into the view, focuses it, locks every key; out again undoes it', async () => {
  const s = scripted();
  const fs = mountFullscreen({ el: s.el, button: s.button, drive: true, input: () => s.input, toast: s.toast });
  assert.equal(s.button.textContent, 'full screen');
  assert.equal(s.button.attrs['aria-pressed'], 'false');
  assert.equal(await fs.toggle(), true);
  await settle();
  assert.deepEqual(s.calls, ['request hide', 'focus in view', 'lock']);
  assert.equal(s.button.textContent, 'exit full screen');
  assert.equal(s.button.attrs['aria-pressed'], 'true');
  assert.deepEqual(s.toasts, [LOCKED_TEXT]);
  s.button.click(); // the same button leaves
  await settle();
  assert.deepEqual(s.calls.slice(3), ['exit', 'unlock']);
  assert.equal(s.sink.parentNode, s.body); // back where it lived
  assert.equal(s.button.textContent, 'full screen');
});

test('a view-only view and a browser without Keyboard Lock leave the browser its keys and say Esc leaves', async () => {
  for (const [drive, lock] of [[false, true], [true, false]]) {
    const s = scripted({ lock });
    const fs = mountFullscreen({ el: s.el, button: s.button, drive, input: () => (drive ? s.input : null),
      toast: s.toast });
    await fs.toggle();
    await settle();
    assert.ok(!s.calls.includes('lock'), `drive ${drive}, lock ${lock}: ${s.calls}`);
    assert.deepEqual(s.toasts, [UNLOCKED_TEXT]);
    await fs.toggle();
    await settle();
    assert.ok(!s.calls.includes('unlock'));
  }
});

test('a lock answered after the view left full screen is undone, and nothing is said', async () => {
  let answer;
  const s = scripted({ lockAnswer: new Promise((r) => { answer = r; }) });
  const fs = mountFullscreen({ el: s.el, button: s.button, drive: true, input: () => s.input, toast: s.toast });
  const entering = fs.toggle();
  await settle();
  // Esc before the browser answered the lock.
  s.doc.fullscreenElement = null;
  for (const fn of s.doc.listeners.fullscreenchange) fn();
  answer();
  await entering;
  await settle();
  assert.deepEqual(s.calls.filter((c) => c === 'lock' || c === 'unlock'), ['lock', 'unlock']);
  assert.deepEqual(s.toasts, []);
  assert.equal(s.button.textContent, 'full screen');
});

test('a refused request is said; where full screen cannot be had there is no button; destroy leaves it', async () => {
  const refused = scripted({ refuse: 'Fullscreen request denied' });
  const fs = mountFullscreen({ el: refused.el, button: refused.button, drive: true, input: () => refused.input,
    toast: refused.toast });
  assert.equal(await fs.toggle(), false);
  assert.deepEqual(refused.toasts, ['Full screen refused: Fullscreen request denied']);
  assert.equal(refused.sink.parentNode, refused.body);

  const none = scripted({ enabled: false });
  const nothing = mountFullscreen({ el: none.el, button: none.button, drive: true, input: () => none.input,
    toast: none.toast });
  assert.equal(none.button.hidden, true);
  assert.equal(await nothing.toggle(), false);
  assert.deepEqual(none.calls, []);

  const s = scripted();
  const view = mountFullscreen({ el: s.el, button: s.button, drive: true, input: () => s.input, toast: s.toast });
  await view.toggle();
  await settle();
  view.destroy();
  await settle();
  assert.deepEqual(s.calls.slice(-2), ['unlock', 'exit']);
  assert.equal(s.doc.listeners.fullscreenchange.length, 0);
});
