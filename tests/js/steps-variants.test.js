// The walkthrough's variant-true pieces (static/js/figures/steps.js): Bahdanau's scores worked out for
// one query, the mask M as what the mask step added, and which telling of each step a setup gets.
import './browser-globals.js';
import test from 'node:test';
import assert from 'node:assert/strict';

import { additiveRow, addedMask, everyRowSeesAKey, stepVariant } from '../../static/js/figures/steps.js';

const close = (a, b, tol = 1e-12) => assert.ok(Math.abs(a - b) <= tol, `${a} vs ${b}`);

test('additiveRow: s_j = Σ_a v_a · tanh(Σ_d q_d W_q[d][a] + Σ_d k_jd W_k[d][a])', () => {
  const q = [0.5, -1.25, 2];
  const K = [[1, 0, -1], [0.25, 2, 0.5], [-3, 1, 1], [0, 0, 0]];
  const wq = [[0.1, -0.2], [0.3, 0.4], [-0.5, 0.6]];
  const wk = [[0.7, 0.1], [-0.2, 0.9], [0.05, -0.3]];
  const v = [1.5, -0.75];
  const { a, B, H, s } = additiveRow(q, K, wq, wk, v);
  assert.equal(a.length, 2);
  assert.equal(B.length, K.length);
  K.forEach((k, j) => {
    let score = 0;
    for (let i = 0; i < v.length; i += 1) {
      let x = 0;
      for (let d = 0; d < q.length; d += 1) x += q[d] * wq[d][i] + k[d] * wk[d][i];
      close(H[j][i], Math.tanh(x));
      score += v[i] * Math.tanh(x);
    }
    close(s[j], score);
  });
  // a key of zeros leaves the query's own part: tanh(a)·v
  close(s[3], a.reduce((sum, x, i) => sum + Math.tanh(x) * v[i], 0));
});

test('addedMask: masked − scaled where a score is kept, null where it is hidden', () => {
  const scaled = [[1, 2, 3], [4, 5, 6]];
  const masked = [[0.5, null, 2], [4, 4.25, null]];
  assert.deepEqual(addedMask(scaled, masked), [[-0.5, null, -1], [0, -0.75, null]]);
  assert.equal(everyRowSeesAKey(masked), true);
  assert.equal(everyRowSeesAKey([[null, null], [1, null]]), false);
});

test('stepVariant names the telling that is true for each setup', () => {
  const base = { variant: 'scaled_dot', temperature: 1, straightThrough: false, positions: 'none' };
  const of = (change, step) => stepVariant({ ...base, ...change }, step);
  assert.equal(of({}, 'scores'), null);
  assert.equal(of({}, 'scale'), null);
  assert.equal(of({}, 'softmax'), null);
  assert.equal(of({ variant: 'additive' }, 'scores'), 'additive');
  assert.equal(of({ variant: 'additive' }, 'scale'), 'additive');
  assert.equal(of({ variant: 'dot' }, 'scale'), 'dot');
  assert.equal(of({ variant: 'dot', temperature: 0.5 }, 'scale'), 'unscaledTemperature');
  assert.equal(of({ temperature: 2 }, 'scale'), 'temperature');
  assert.equal(of({ variant: 'hard', temperature: 2 }, 'scale'), 'temperature');
  assert.equal(of({ variant: 'hard' }, 'softmax'), 'hard');
  assert.equal(of({ variant: 'sample' }, 'softmax'), 'sample');
  assert.equal(of({ variant: 'gumbel' }, 'softmax'), 'gumbel');
  assert.equal(of({ variant: 'gumbel', straightThrough: true }, 'softmax'), 'gumbelST');
  assert.equal(of({ variant: 'gumbel' }, 'weighted_sum'), null);
  assert.equal(of({ variant: 'sample' }, 'weighted_sum'), 'oneHot');
  assert.equal(of({ positions: 'alibi' }, 'mask'), 'alibi');
  assert.equal(of({ positions: 'rope' }, 'split'), 'rope');
  assert.equal(of({ positions: 'sinusoidal' }, 'input'), 'sinusoidal');
  assert.equal(of({ positions: 'rope' }, 'input'), null);
  // a model's trace: 1/√d_head is the plain telling; another factor is the model's own; a soft-cap says so
  const trace = { source: 'trace', dHead: 16 };
  assert.equal(of({ ...trace, scale: 0.25 }, 'scale'), null);
  assert.equal(of({ ...trace, scale: 12 ** -0.5 }, 'scale'), 'own');
  assert.equal(of({ ...trace, scale: 12 ** -0.5, softcap: 3 }, 'scale'), 'softcap');
  assert.equal(of({ source: 'toy', dHead: 16, scale: 1 }, 'scale'), null); // the toy's own tellings decide
});
