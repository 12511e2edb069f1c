// The replay view's pure parts (web/lib/replay.js): the fragment, where a step acted, its one-line summary, and the
// pointer's course with the page's cursor.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  describeStep, pointerAt, pointerShape, pointerTrack, readFragment, stepAt, stepPlace,
} from '../../web/lib/replay.js';

test('the fragment names the token, the frame and perhaps a recording', () => {
  assert.deepEqual(readFragment('#token=T.x&frame=f1'), { token: 'T.x', frame: 'f1', recording: null });
  assert.equal(readFragment('#token=a&frame=b&recording=r1').recording, 'r1');
});

test('a step acted where its last pointer event was', () => {
  const click = { events: [{ kind: 'mouse', action: 'down', x: 10, y: 20 }, { kind: 'mouse', action: 'up', x: 11, y: 21 }] };
  assert.deepEqual(stepPlace(click), { x: 11, y: 21 });
  assert.deepEqual(stepPlace({ events: [{ kind: 'touch', action: 'start', points: [{ id: 0, x: 5, y: 6 }] }] }), { x: 5, y: 6 });
  assert.equal(stepPlace({ events: [{ kind: 'text', text: 'a' }] }), null);
  assert.equal(stepPlace({ kind: 'navigate', url: 'http://x/' }), null);
  assert.deepEqual(stepPlace({ kind: 'drop', x: 400, y: 140, files: ['a.png'] }), { x: 400, y: 140 });
  assert.equal(describeStep({ subject: 'ana', kind: 'drop', x: 400.2, y: 140, files: ['a.png', 'b.txt'], ok: true }),
    'ana: drop a.png, b.txt at 400,140');
  const track = pointerTrack([{ t_us: 1, type: 'step', ok: true, subject: 'ana', kind: 'drop', x: 5, y: 6 }]);
  assert.deepEqual(pointerAt(track, 1), { t_us: 1, x: 5, y: 6, down: false, subject: 'ana', cursor: 'default' });
});

test('a press and release at one place reads as a click, with the move to it', () => {
  const m = (action, x, y, clicks = 1, button = 'left') => ({ kind: 'mouse', action, x, y, clicks, button });
  const say = (events) => describeStep({ subject: 'agent', kind: 'input', ok: true, events });
  assert.equal(say([m('move', 10, 20, 0, 'none'), m('down', 10, 20), m('up', 10, 20)]), 'agent: click 10,20');
  assert.equal(say([m('move', 1, 2, 0, 'none'), m('down', 1, 2), m('up', 1, 2), m('down', 1, 2, 2), m('up', 1, 2, 2)]),
    'agent: double-click 1,2');
  assert.equal(say([m('down', 5, 5, 1, 'right'), m('up', 5, 5, 1, 'right')]), 'agent: right click 5,5');
  assert.equal(say([m('move', 0, 0, 0, 'none'), m('down', 0, 0), m('move', 30, 40, 0, 'none'), m('up', 30, 40)]),
    'agent: move 0,0, down 0,0, move 30,40, up 30,40'); // a drag stays as it was
  assert.equal(say([m('down', 7, 7)]), 'agent: down 7,7');
});

test('a step reads as who did what and how it ended; hidden text stays hidden', () => {
  assert.equal(describeStep({ subject: 'agent', step: true, kind: 'input', ok: true,
    events: [{ kind: 'text', redacted: true, length: 7 }] }), 'agent (step): text (7 hidden)');
  assert.equal(describeStep({ subject: 'bob', kind: 'navigate', url: 'http://x/', ok: false, error: 'navigation-failed' }),
    'bob: navigate http://x/ → navigation-failed');
});

const mouse = (action, x, y, buttons = 0) => ({ kind: 'mouse', action, x, y, buttons });
const step = (t_us, subject, events, ok = true) => ({ t_us, type: 'step', subject, ok, events, kind: 'input' });

test('the pointer goes where each applied step left it, with the page\'s cursor of the time', () => {
  const lines = [
    { t_us: 0, type: 'recording' },
    { t_us: 5, type: 'cursor', cursor: 'text' }, // before the pointer was anywhere: kept for when it is
    step(10, 'bob', [mouse('move', 10, 20)]),
    { t_us: 30, type: 'cursor', cursor: 'pointer' }, // told at 30, written before the step of 20 that caused it
    step(20, 'bob', [mouse('move', 100, 60)]),
    step(40, 'agent', [mouse('down', 100, 60, 1), mouse('up', 101, 61)]),
    step(50, 'agent', [mouse('down', 5, 5, 1)]),
    step(60, 'agent', [mouse('move', 300, 300)], false), // refused: the pointer did not go there
    step(70, 'bob', [{ kind: 'key', action: 'down', key: 'a' }]), // no pointer event: stays
    { t_us: 80, type: 'state', state: 'paused' },
    { t_us: 90, type: 'state', state: 'launching' }, // a new browser: its page tells its own cursor
    step(100, 'bob', [{ kind: 'touch', action: 'start', points: [{ id: 0, x: 7, y: 8 }] }]),
  ];
  const track = pointerTrack(lines);
  assert.equal(pointerAt(track, 9), null);
  assert.deepEqual(pointerAt(track, 10), { t_us: 10, x: 10, y: 20, down: false, subject: 'bob', cursor: 'text' });
  assert.deepEqual(pointerAt(track, 25), { t_us: 20, x: 100, y: 60, down: false, subject: 'bob', cursor: 'text' });
  assert.equal(pointerAt(track, 30).cursor, 'pointer');
  assert.deepEqual(pointerAt(track, 45), { t_us: 40, x: 101, y: 61, down: false, subject: 'agent', cursor: 'pointer' });
  assert.deepEqual(pointerAt(track, 79), { t_us: 50, x: 5, y: 5, down: true, subject: 'agent', cursor: 'pointer' });
  assert.equal(pointerAt(track, 85).cursor, 'pointer'); // paused: the same browser, the same cursor
  assert.equal(pointerAt(track, 95).cursor, 'default');
  assert.deepEqual(pointerAt(track, 1e9), { t_us: 100, x: 7, y: 8, down: true, subject: 'bob', cursor: 'default' });
});

test('a cursor keyword the viewer does not know is drawn as the arrow, and none as nothing', () => {
  assert.equal(pointerShape('pointer'), 'hand');
  assert.equal(pointerShape('text'), 'beam');
  assert.equal(pointerShape('crosshair'), 'cross');
  assert.equal(pointerShape('none'), 'none');
  assert.equal(pointerShape('wait'), 'arrow');
  assert.equal(pointerShape('default'), 'arrow');
  const track = pointerTrack([step(1, 'a', [mouse('move', 1, 1)]), { t_us: 2, type: 'cursor', cursor: 'url(x.png)' }]);
  assert.equal(pointerAt(track, 2).cursor, 'default');
});

test('the step under way at a time is the last that began by then', () => {
  const steps = [{ t_us: 10 }, { t_us: 20 }, { t_us: 20 }, { t_us: 35 }];
  assert.equal(stepAt(steps, 9), -1);
  assert.equal(stepAt(steps, 10), 0);
  assert.equal(stepAt(steps, 25), 2);
  assert.equal(stepAt(steps, 1e9), 3);
  assert.equal(stepAt([], 5), -1);
});
