// What a drawn weight matrix reads at its cells' two decimals (static/js/toy/weights-summary.js), against
// counts made here with plain rounding, and the caption each summary supports.
import './browser-globals.js';
import test from 'node:test';
import assert from 'node:assert/strict';

import { weightsCaption, weightsSummary } from '../../static/js/toy/weights-summary.js';

/** Counts made independently: a weight reads 0 when it rounds to 0.00, 1 when it rounds to 1.00. */
function counted(weights) {
  const r = (w) => Math.round(w * 100) / 100;
  const cells = weights.flat();
  return {
    zeros: cells.filter((w) => r(w) === 0).length,
    oneHot: weights.filter((row) => row.filter((w) => r(w) === 1).length === 1 && row.every((w) => r(w) === 0 || r(w) === 1)).length,
  };
}

// seed 0, τ = 0.1 of the worked example's Gumbel-softmax, head 0 (as the API answers it, 17 digits)
const GUMBEL = [
  [0.9487959733011451, 2.2404220964932907e-14, 7.897410805178528e-15, 0.05120402669882484],
  [1.6101719961065725e-06, 0.9999983873952699, 2.1647055205388238e-09, 2.680281787186362e-10],
  [0.03611368269312179, 8.972051809615888e-06, 0.963493101586955, 0.00038424366811365846],
  [6.965040753103232e-08, 1.211600712413685e-10, 2.279678681188574e-06, 0.9999976505497511],
];

test('a Gumbel-softmax at τ = 0.1: the zeros and one-hot rows a reader sees, though no weight is exactly 0', () => {
  const s = weightsSummary(GUMBEL);
  assert.deepEqual({ zeros: s.zeros, oneHot: s.oneHot }, counted(GUMBEL));
  assert.equal(s.rows, 4);
  assert.equal(s.cells, 16);
  assert.equal(s.exactZeros, 0); // every key gets some weight, but 10 of them read 0.00
  assert.equal(s.exactOneHot, 0);
  assert.equal(s.topText, '1.00'); // 0.99999765… is written 1.00 in its cell
  assert.equal(weightsCaption(s), 'zeros'); // not "every key gets some weight"
});

test('exact one-hot rows (hard, sampled, straight-through) are said as such', () => {
  const hard = [[0, 1, 0], [1, 0, 0]];
  const s = weightsSummary(hard);
  assert.equal(s.exactOneHot, 2);
  assert.equal(s.oneHot, 2);
  assert.equal(s.topText, '1');
  assert.equal(weightsCaption(s), 'hard');
});

test('soft rows with no weight reading 0.00 are "soft"; one rounding to 0.00 is not', () => {
  const soft = [[0.2, 0.3, 0.5], [0.01, 0.49, 0.5]];
  assert.equal(weightsCaption(weightsSummary(soft)), 'soft');
  assert.equal(weightsSummary(soft).topText, '0.50');
  const almost = [[0.004, 0.496, 0.5]];
  assert.deepEqual({ zeros: weightsSummary(almost).zeros, oneHot: weightsSummary(almost).oneHot }, counted(almost));
  assert.equal(weightsCaption(weightsSummary(almost)), 'zeros');
});

test('random rows: the counts agree with plain rounding', () => {
  let seed = 7;
  const random = () => {
    seed = (seed * 16807) % 2147483647;
    return seed / 2147483647;
  };
  for (let trial = 0; trial < 200; trial += 1) {
    const rows = Array.from({ length: 4 }, () => {
      const raw = Array.from({ length: 5 }, () => random() ** (1 + 30 * random()));
      const sum = raw.reduce((a, b) => a + b, 0);
      return raw.map((x) => x / sum);
    });
    const s = weightsSummary(rows);
    assert.deepEqual({ zeros: s.zeros, oneHot: s.oneHot }, counted(rows));
  }
});
