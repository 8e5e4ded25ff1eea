// oneAtATime (static/js/labs/one-at-a-time.js): drawings run in turn and the last call always draws last.
import test from 'node:test';
import assert from 'node:assert/strict';

import { oneAtATime } from '../../static/js/labs/one-at-a-time.js';

const pause = (ms) => new Promise((resolve) => { setTimeout(resolve, ms); });

test('a slow first drawing cannot finish after a later one: the view ends with the last choice', async () => {
  const page = { head: 0 };
  const drawn = [];
  let running = 0;
  const show = oneAtATime(async () => {
    running += 1;
    assert.equal(running, 1, 'never two drawings at once');
    const head = page.head;
    await pause(head === 0 ? 30 : 1); // the first choice answers slowly
    drawn.push(head);
    running -= 1;
  });
  const first = show();
  await pause(0); // the first drawing has begun (with head 0) when the learner picks head 2
  page.head = 2;
  const second = show();
  await Promise.all([first, second]);
  assert.deepEqual(drawn, [0, 2]);
});

test('calls made while a drawing runs collapse into one drawing of the newest choice', async () => {
  const page = { head: 0 };
  const drawn = [];
  const show = oneAtATime(async () => { const { head } = page; await pause(5); drawn.push(head); });
  const calls = [show()];
  for (const head of [1, 2, 3]) { page.head = head; calls.push(show()); }
  await Promise.all(calls);
  assert.deepEqual(drawn, [3]); // the first call had not started yet either: it yields to the waiting ones
});

test('a drawing that fails does not stop the next one, and its caller sees the failure', async () => {
  let fail = true;
  const drawn = [];
  const show = oneAtATime(async () => { if (fail) throw new Error('refused'); drawn.push('ok'); });
  await assert.rejects(show(), /refused/);
  fail = false;
  await show();
  assert.deepEqual(drawn, ['ok']);
});
