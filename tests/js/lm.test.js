// /lm's pure module (static/js/figures/lm.js): the loss figure drawn from the evaluations it is given, with the
// entropies as level lines; where the held-out loss stands; the heads' order; the links' query strings read back
// with URLSearchParams; the learner's sentence cut at whole characters.
import './browser-globals.js';
import test from 'node:test';
import assert from 'node:assert/strict';

import {
  explorerLink, firstSentence, headRows, lossFigure, standing, stepsLink, trainBody,
} from '../../static/js/figures/lm.js';

const evals = [
  { step: 0, train_loss: 7.9, val_loss: 7.95, unigram_entropy: 5.5, bigram_entropy: 3.25, sample: '注意' },
  { step: 10, train_loss: 5.1, val_loss: 5.2, unigram_entropy: 5.5, bigram_entropy: 3.25, sample: '力' },
  { step: 20, train_loss: 3.0, val_loss: 3.1, unigram_entropy: 5.5, bigram_entropy: 3.25, sample: '机制' },
];

test('the loss figure: both curves at their steps, the entropies flat across the run', () => {
  const figure = lossFigure(evals, (key) => key, 40);
  const [train, val, unigram, bigram] = figure.data;
  assert.deepEqual(train.x, [0, 10, 20]);
  assert.deepEqual(train.y, [7.9, 5.1, 3.0]);
  assert.deepEqual(val.y, [7.95, 5.2, 3.1]);
  assert.deepEqual(unigram.y, [5.5, 5.5]);
  assert.deepEqual(bigram.y, [3.25, 3.25]);
  assert.deepEqual(unigram.x, [0, 40], 'the lines span the whole run, not only the steps done');
  assert.deepEqual(figure.layout.xaxis.range, [0, 40]);
  assert.equal(lossFigure([], (key) => key, 10).data.length, 2, 'no entropy lines before the first evaluation');
});

test('the held-out loss against the unigram and bigram entropies', () => {
  assert.equal(standing(evals[0]), 'above');
  assert.equal(standing(evals[1]), 'between');
  assert.equal(standing(evals[2]), 'below');
  assert.equal(standing(undefined), null);
});

test('heads with a role come first, the strongest first; the rest by layer and head', () => {
  const heads = [
    { layer: 0, head: 0, previous_token: 0.1, induction: 0.0, positional: 0.5, roles: [] },
    { layer: 0, head: 1, previous_token: 0.9, induction: 0.0, positional: 0.95, roles: ['previous_token', 'positional'] },
    { layer: 1, head: 0, previous_token: 0.0, induction: 0.45, positional: 0.2, roles: ['induction'] },
    { layer: 1, head: 1, previous_token: 0.2, induction: 0.1, positional: 0.4, roles: [] },
  ];
  assert.deepEqual(headRows(heads).map((h) => [h.layer, h.head]), [[0, 1], [1, 0], [0, 0], [1, 1]]);
});

test('the links open the model on the sentence at the head; /steps queries the last character', () => {
  const text = '注意力机制让模型学会聚焦';
  const explorer = new URL(explorerLink('lm-0123abcd', text, 1, 2), 'http://x');
  assert.equal(explorer.pathname, '/');
  assert.deepEqual(Object.fromEntries(explorer.searchParams), { model: 'lm-0123abcd', text, layer: '1', head: '2' });
  const steps = new URL(stepsLink('lm-0123abcd', text, 0, 1, 'zh'), 'http://x');
  assert.equal(steps.pathname, '/steps');
  assert.equal(steps.searchParams.get('query'), String(Array.from(text).length - 1));
  assert.equal(steps.searchParams.get('lang'), 'zh');
});

test('the sentence: the first line, up to its first full stop, whole characters', () => {
  assert.equal(firstSentence('\n  注意力机制让模型学会聚焦重要的信息。然后更多。\n第二行'), '注意力机制让模型学会聚焦重要的信息。');
  assert.equal(firstSentence('𠀀'.repeat(50), 5), '𠀀'.repeat(5), 'a character outside the BMP is not cut in half');
  assert.equal(firstSentence(''), '');
});

test('the request body keeps only whole numbers', () => {
  assert.deepEqual(trainBody({ steps: '60', seed: ' 3 ', context: '', layers: 'x', heads: '2.5', d_model: 32 }),
    { steps: 60, seed: 3, d_model: 32 });
});
