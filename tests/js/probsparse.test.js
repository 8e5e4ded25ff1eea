// ProbSparse's step captions on /toy (static/js/figures/probsparse.js): every number they state is read
// from the answer's `probsparse` and steps, and each step gets the telling that is true for the data
// (lazy rows as a mean, as a causal cumulative sum, or no lazy rows at all: full attention).
import './browser-globals.js';
import test from 'node:test';
import assert from 'node:assert/strict';

import { isFullAttention, probsparseFacts, probsparseVariant } from '../../static/js/figures/probsparse.js';
import { fromToy, stepVariant } from '../../static/js/figures/steps.js';
import en from '../../static/js/i18n/en.js';
import zh from '../../static/js/i18n/zh.js';

/** A /toy answer of variant probsparse, L = 5 queries, S = 5 keys, 2 heads, u = 2 (c = 1). */
function answer({ active = [[1, 3], [0, 4]], difference = [0.5, 0, 2.25, 1e-15, 0.75] } = {}) {
  const rows = Array.from({ length: 5 }, () => [0, 0]);
  return {
    d_model: 4, n_heads: 2, d_head: 2, d_values: 2, scale: 0.7071, variant: 'probsparse', temperature: 1, seed: 0,
    straight_through: false, positions: 'none', factor: 1,
    steps: { input: { q: rows, k: rows, v: rows } },
    probsparse: {
      sampled_keys: [[3, 0], [1, 1], [4, 2], [0, 3], [2, 2]],
      measure: [[0.1, 2.5, 0.2, 1.75, 0.3], [3, 0.5, 0.25, 0.125, 1.5]],
      active,
      output_difference: difference,
    },
  };
}

test('probsparseFacts reads every stated number from the answer', () => {
  const T = fromToy(answer());
  const facts = probsparseFacts(T, 1, 4);
  assert.deepEqual(facts, {
    factor: 1, L: 5, S: 5, U: 2, u: 2, sampled: 'k2, k2', measure: '1.5000', activeList: 'q0, q4', lazy: 3,
    lazyList: 'q1, q2, q3', inverseS: '0.2000', lastLazy: 'q3', lastCount: 4, changed: 3, worst: '2.2500',
    worstQuery: 'q2', own: '0.7500',
  });
  assert.equal(probsparseFacts(T, 0, 9).measure, '0.3000'); // the query is clamped to the rows
});

test('each step gets the telling true for the data', () => {
  const plain = fromToy(answer());
  const causal = fromToy(answer(), { causal: true });
  const full = fromToy(answer({ active: [[0, 1, 2, 3, 4], [0, 1, 2, 3, 4]], difference: [0, 0, 0, 0, 0] }));
  assert.equal(isFullAttention(plain), false);
  assert.equal(isFullAttention(full), true);
  assert.deepEqual(['scores', 'scale', 'softmax', 'weighted_sum', 'output'].map((s) => stepVariant(plain, s)),
    ['probsparse', null, 'probsparse', 'probsparse', 'probsparse']);
  assert.equal(stepVariant(causal, 'softmax'), 'probsparseCausal');
  assert.equal(stepVariant(causal, 'weighted_sum'), 'probsparseCausal');
  assert.deepEqual(['softmax', 'weighted_sum', 'output'].map((s) => probsparseVariant(full, s)),
    ['probsparseFull', null, 'probsparseFull']);
});

test('every ProbSparse caption exists in both languages with the same placeholders', () => {
  const keys = Object.keys(en).filter((k) => /probsparse|toy_factor|name\.factor/i.test(k));
  const toy = keys.filter((k) => !/^(explorer|informer)\./.test(k)); // the toy's and the steps' (the others below)
  assert.equal(toy.length, 29);
  const holes = (text) => [...text.matchAll(/\{(\w+)\}/g)].map((m) => m[1]).sort();
  for (const key of keys) {
    assert.ok(key in zh, key);
    assert.deepEqual(holes(zh[key]), holes(en[key]), key);
  }
  const facts = Object.keys(probsparseFacts(fromToy(answer()), 0, 0));
  const known = new Set([...facts, 'query', 'head', 'scale', 'max', 'variant', 'queries', 'keys', 'shape', 'rows']);
  for (const key of toy) for (const hole of holes(en[key])) assert.ok(known.has(hole), `${key}: {${hole}}`);
});
