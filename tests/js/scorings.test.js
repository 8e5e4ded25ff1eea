// Luong's general score, cosine scores and the de-stationary factors on /toy (static/js/figures/steps.js):
// which telling each step gets, and the note on τ and δ, whose numbers are read from the answer.
import './browser-globals.js';
import test from 'node:test';
import assert from 'node:assert/strict';

import { destationaryNote, fromToy, stepVariant } from '../../static/js/figures/steps.js';
import en from '../../static/js/i18n/en.js';
import zh from '../../static/js/i18n/zh.js';

function answer(changes = {}) {
  const rows = Array.from({ length: 3 }, () => [0, 0]);
  return {
    d_model: 2, n_heads: 1, d_head: 2, d_values: 2, scale: 0.5, variant: 'scaled_dot', temperature: 1, seed: 0,
    straight_through: false, positions: 'none', tau: 1, delta: [0, 0, 0],
    steps: { input: { q: rows, k: rows, v: rows } },
    ...changes,
  };
}

test('general and cosine get their own scores and scale steps', () => {
  const general = fromToy(answer({ variant: 'general', scale: 1 }));
  assert.equal(stepVariant(general, 'scores'), 'general');
  assert.equal(stepVariant(general, 'scale'), 'general');
  assert.equal(stepVariant(fromToy(answer({ variant: 'general', temperature: 2 })), 'scale'), 'unscaledTemperature');
  const cosine = fromToy(answer({ variant: 'cosine' }));
  assert.deepEqual(['scores', 'scale', 'softmax'].map((s) => stepVariant(cosine, s)), ['cosine', 'cosine', null]);
});

test('the de-stationary note says what τ and δ do, with the numbers of the answer', () => {
  assert.equal(destationaryNote(fromToy(answer())), null);
  const equal = destationaryNote(fromToy(answer({ tau: 2, delta: [1.5, 1.5, 1.5] })));
  assert.equal(equal.noteKey, 'destationaryEqual');
  assert.deepEqual(equal.noteValues, { tau: '2', delta: '1.5', scale: '0.5000', top: 'k0', gain: '1' });
  const perKey = destationaryNote(fromToy(answer({ delta: [0, 2, -1] })));
  assert.equal(perKey.noteKey, 'destationary');
  assert.equal(perKey.noteValues.delta, '0, 2, -1');
  assert.equal(perKey.noteValues.top, 'k1');
  assert.equal(perKey.noteValues.gain, String(Number(Math.exp(0.5 * 3).toFixed(4)))); // e^(scale·(δ_max − δ_min))
  for (const key of ['step.note.destationary', 'step.note.destationaryEqual', 'step.scores.general.body',
    'step.scores.cosine.body', 'step.scale.cosine.body', 'toy.problem.toy_delta_length']) {
    const holes = (text) => [...text.matchAll(/\{(\w+)\}/g)].map((m) => m[1]).sort();
    assert.deepEqual(holes(zh[key]), holes(en[key]), key);
  }
});
