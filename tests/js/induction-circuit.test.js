// The induction lab's numbers as its page states them (static/js/induction/circuit.js): the drop, the strongest
// heads of each kind in the right layers, and the watched sequence's evidence, against maps built here with a
// known answer (a previous-token head and an induction head written by hand).
import test from 'node:test';
import assert from 'node:assert/strict';

import { circuitOf, dropOf, evidenceOf, SCORE_GOAL } from '../../static/js/induction/circuit.js';

const T = 8; // R R with R of 4 tokens
const HALF = T / 2;
const tokens = [5, 9, 2, 7, 5, 9, 2, 7];

/** A causal T x T map whose row i puts 0.9 on key(i) (when it may) and spreads the rest over the other keys ≤ i. */
function map(key) {
  return Array.from({ length: T }, (_, i) => {
    const target = key(i);
    const row = Array(T).fill(0);
    if (target === null || target < 0 || target > i) {
      for (let k = 0; k <= i; k += 1) row[k] = 1 / (i + 1);
      return row;
    }
    for (let k = 0; k <= i; k += 1) row[k] = i === 0 ? 1 : (k === target ? 0.9 : 0.1 / i);
    return row;
  });
}

const uniform = map(() => null);
const previous = map((i) => i - 1);
const induction = map((i) => (i >= HALF ? i - HALF + 1 : null));

const event = {
  step: 500,
  tokens,
  previous_token: [[0.1, 0.8], [0.2, 0.1]],
  induction: [[0.9, 0.1], [0.3, 0.7]], // layer 0's 0.9 must not count: an induction head needs a layer before it
  maps: [[uniform, previous], [uniform, induction]],
};

test('the circuit: the strongest induction score after layer 0, the strongest previous-token score before it', () => {
  const circuit = circuitOf(event);
  assert.deepEqual(circuit.induction, { layer: 1, head: 1, score: 0.7 });
  assert.deepEqual(circuit.previous, { layer: 0, head: 1, score: 0.8 });
  assert.equal(circuit.formed, true);
  assert.equal(circuitOf({ ...event, induction: [[0.9, 0.1], [0.3, SCORE_GOAL - 0.01]] }).formed, false);
  assert.equal(circuitOf({ ...event, induction: [[0.9, 0.1]], previous_token: [[0.9, 0.1]] }), null); // one layer
});

test('the evidence reads the two heads at the watched positions', () => {
  const e = evidenceOf(event, circuitOf(event));
  assert.deepEqual([e.q, e.j, e.next], [5, 1, 2]); // q = 4 + ⌊3 / 2⌋
  assert.equal(e.token, 9); // tokens[5] === tokens[1]
  assert.equal(e.following, 2); // tokens[2] === tokens[6]
  assert.equal(e.previous.weight, 0.9); // the previous-token head at 2 on 1
  assert.deepEqual(e.previous.peak, { at: 1, weight: 0.9 });
  assert.equal(e.induction.weight, 0.9); // the induction head at 5 on 2
  assert.deepEqual(e.induction.peak, { at: 2, weight: 0.9 });
  // with the heads swapped for uniform ones, each row's largest weight is its first (ties: the first)
  const flat = { ...event, maps: [[uniform, uniform], [uniform, uniform]] };
  const f = evidenceOf(flat, circuitOf(flat));
  assert.deepEqual(f.induction.peak, { at: 0, weight: 1 / 6 });
});

test('the drop is the first evaluation below half of ln(vocab)', () => {
  const evals = [4.1, 3.9, 2.2, 2.0, 0.4, 2.5].map((loss, i) => ({ step: 50 * i, loss_repeated_half: loss }));
  assert.equal(Math.log(64) / 2 > 2.0 && Math.log(64) / 2 < 2.2, true);
  assert.equal(dropOf(evals, 64).step, 150);
  assert.equal(dropOf(evals.slice(0, 3), 64), null);
});
