import { test } from 'node:test';
import assert from 'node:assert/strict';
import { HeldInputs, buttonName, heldButtonName, isComposing, isPasteShortcut, keyEvent, modifiersOf, textEvents }
  from '../../web/lib/keys.js';

test('modifiers follow the CDP mask: Alt 1, Ctrl 2, Meta 4, Shift 8', () => {
  assert.equal(modifiersOf({}), 0);
  assert.equal(modifiersOf({ altKey: true }), 1);
  assert.equal(modifiersOf({ ctrlKey: true }), 2);
  assert.equal(modifiersOf({ metaKey: true }), 4);
  assert.equal(modifiersOf({ shiftKey: true }), 8);
  assert.equal(modifiersOf({ altKey: true, ctrlKey: true, metaKey: true, shiftKey: true }), 15);
  assert.equal(modifiersOf({ ctrlKey: true, shiftKey: true }), 10);
});

test('buttons', () => {
  assert.equal(buttonName(0), 'left');
  assert.equal(buttonName(1), 'middle');
  assert.equal(buttonName(2), 'right');
  assert.equal(buttonName(3), 'none');
  assert.equal(heldButtonName(0), 'none');
  assert.equal(heldButtonName(1), 'left');
  assert.equal(heldButtonName(2), 'right');
  assert.equal(heldButtonName(4), 'middle');
  assert.equal(heldButtonName(6), 'right');
});

test('key events carry DOM key and code, the mask, and repeat', () => {
  assert.deepEqual(keyEvent('down', { key: 'A', code: 'KeyA', shiftKey: true, repeat: false }),
    { kind: 'key', action: 'down', key: 'A', code: 'KeyA', modifiers: 8 });
  assert.deepEqual(keyEvent('down', { key: 'a', code: 'KeyA', repeat: true }),
    { kind: 'key', action: 'down', key: 'a', code: 'KeyA', modifiers: 0, repeat: true });
  assert.deepEqual(keyEvent('up', { key: 'a', code: 'KeyA', repeat: true }),
    { kind: 'key', action: 'up', key: 'a', code: 'KeyA', modifiers: 0 });
  assert.deepEqual(keyEvent('down', { key: 'Control', code: 'ControlRight', ctrlKey: true, location: 2 }),
    { kind: 'key', action: 'down', key: 'Control', code: 'ControlRight', modifiers: 2 });
});

test('long text is split into events of at most max code points, never inside a surrogate pair', () => {
  assert.deepEqual(textEvents('héllo'), [{ kind: 'text', text: 'héllo' }]);
  assert.deepEqual(textEvents(''), []);
  const parts = textEvents('ab😀cd😀e', 3);
  assert.deepEqual(parts.map((p) => p.text), ['ab😀', 'cd😀', 'e']);
  const big = 'x'.repeat(10_001);
  const chunks = textEvents(big);
  assert.equal(chunks.map((c) => c.text).join(''), big);
  assert.ok(chunks.every((c) => c.text.length <= 4000));
});

test('paste shortcut and composition detection', () => {
  assert.equal(isPasteShortcut({ key: 'v', code: 'KeyV', ctrlKey: true }), true);
  assert.equal(isPasteShortcut({ key: 'v', code: 'KeyV', metaKey: true }), true);
  assert.equal(isPasteShortcut({ key: 'v', code: 'KeyV' }), false);
  assert.equal(isPasteShortcut({ key: 'v', code: 'KeyV', ctrlKey: true, altKey: true }), false);
  assert.equal(isComposing({ isComposing: true }), true);
  assert.equal(isComposing({ keyCode: 229 }), true);
  assert.equal(isComposing({ key: 'a', keyCode: 65 }), false);
});

test('held keys and buttons are released on blur, and only once', () => {
  const h = new HeldInputs();
  h.keyDown({ key: 'Shift', code: 'ShiftLeft' });
  h.keyDown({ key: 'a', code: 'KeyA' });
  h.keyDown({ key: 'a', code: 'KeyA' }); // repeat: still one key
  h.buttonDown('left', 10, 20);
  h.buttonDown('right', 12, 22);
  h.moved(30, 40);
  assert.equal(h.any, true);
  assert.equal(h.isHeld({ key: 'a', code: 'KeyA' }), true);
  const ev = h.releaseAll();
  assert.deepEqual(ev, [
    { kind: 'mouse', action: 'up', x: 30, y: 40, button: 'left', buttons: 2, clicks: 1, modifiers: 0 },
    { kind: 'mouse', action: 'up', x: 30, y: 40, button: 'right', buttons: 0, clicks: 1, modifiers: 0 },
    { kind: 'key', action: 'up', key: 'Shift', code: 'ShiftLeft', modifiers: 0 },
    { kind: 'key', action: 'up', key: 'a', code: 'KeyA', modifiers: 0 },
  ]);
  assert.equal(h.any, false);
  assert.deepEqual(h.releaseAll(), []);
});

test('a key released normally is not released again', () => {
  const h = new HeldInputs();
  h.keyDown({ key: 'a', code: 'KeyA' });
  h.keyUp({ key: 'a', code: 'KeyA' });
  h.buttonDown('middle', 1, 1);
  h.buttonUp('middle', 1, 1);
  assert.deepEqual(h.releaseAll(), []);
  assert.equal(h.isHeld({ key: 'b', code: 'KeyB' }), false);
});

test('keys without a code are tracked by key', () => {
  const h = new HeldInputs();
  h.keyDown({ key: 'Unidentified', code: '' });
  assert.deepEqual(h.releaseAll(), [{ kind: 'key', action: 'up', key: 'Unidentified', code: '', modifiers: 0 }]);
});
