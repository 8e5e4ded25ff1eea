// One name for each thing of the toy's backward pass and additive scoring, in every dictionary, in the
// backward view's formulas, in the API's route and schema text and in the docs: the attention weights A
// and their gradient dA (never dP, which once named the projections' outputs' gradient as well); the
// additive scorer's own W, U and v (never W_q, W_k, the names of the editable projections beside it).
import './browser-globals.js';
import test from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, readdirSync } from 'node:fs';

import baseEn from '../../static/js/i18n/en.js';
import baseZh from '../../static/js/i18n/zh.js';
import learnEn from '../../static/js/i18n/learn-en.js';
import learnZh from '../../static/js/i18n/learn-zh.js';
import { backwardSteps, FORMULAS, VARIANT_FORMULAS } from '../../static/js/figures/backward.js';

const DICTIONARIES = { en: baseEn, zh: baseZh, 'learn-en': learnEn, 'learn-zh': learnZh };
const root = new URL('../../', import.meta.url);
const read = (path) => readFileSync(new URL(path, root), 'utf8');
const joined = (python) => python.replace(/"\s*\n\s*f?"/g, ''); // adjacent string literals as one text
const TEXTS = {
  'app/routes/toy.py': joined(read('app/routes/toy.py')),
  'app/schemas/toy.py': joined(read('app/schemas/toy.py')),
  ...Object.fromEntries(readdirSync(new URL('docs/', root)).filter((f) => f.endsWith('.md')).map((f) => [`docs/${f}`, read(`docs/${f}`)])),
  'README.md': read('README.md'),
  // /flash names the same weights and gradient (FlashAttention's paper writes P and dP)
  'static/js/flash-page.js': read('static/js/flash-page.js'),
  'static/js/figures/flash.js': read('static/js/figures/flash.js'),
};
const dP = /\bdP\b/;

test('dP names nothing: not in a dictionary, a backward formula, /flash, the API text or the docs', () => {
  for (const [name, dictionary] of Object.entries(DICTIONARIES)) {
    for (const [key, text] of Object.entries(dictionary)) assert.doesNotMatch(text, dP, `${name} ${key}`);
  }
  for (const [id, text] of Object.entries({ ...FORMULAS, ...VARIANT_FORMULAS })) assert.doesNotMatch(text, dP, id);
  for (const [path, text] of Object.entries(TEXTS)) assert.doesNotMatch(text, dP, path);
});

test('the gradient of the attention weights is dA in the backward view, learn chapter "Learning" and the API', () => {
  assert.match(FORMULAS.softmax, /^dA_h = /);
  assert.match(FORMULAS.scores, /dA_h/);
  for (const dictionary of [learnEn, learnZh]) {
    assert.match(dictionary['learn.c8.softmax'], /^dA\b/);
    assert.match(dictionary['learn.c8.p1'], /\bdA\b/);
  }
  assert.match(TEXTS['app/routes/toy.py'], /dA = dctx_h·Vᵀ/);
  assert.match(TEXTS['static/js/flash-page.js'], /'A = exp\(S − m − log ℓ\)'/);
  assert.match(TEXTS['static/js/flash-page.js'], /'dS = A ⊙ \(dA − D\)'/);
  assert.doesNotMatch(TEXTS['static/js/flash-page.js'], /\bP = |\bPᵀ/);
  // the projections' outputs' gradients have their own names: dQ, dK, dV (and dY for W_o)
  assert.match(FORMULAS.weights, /dW_q = X_qᵀ · dQ/);
  assert.match(FORMULAS.inputs, /dX_q = dQ · W_qᵀ/);
});

const ADDITIVE_KEYS = ['step.scores.additive.title', 'walk.cap.additiveA', 'walk.cap.additiveB', 'walk.cap.additiveScores', 'toy.compare.additive'];

test('the additive scorer is vᵀ tanh(q·W + k·U) in both languages, never with W_q or W_k', () => {
  for (const dictionary of [baseEn, baseZh]) {
    for (const key of ADDITIVE_KEYS) assert.doesNotMatch(dictionary[key], /W_q|W_k/, key);
    assert.match(dictionary['step.scores.additive.title'], /q·W \+ k·U/);
    assert.match(dictionary['walk.cap.additiveA'], /^a = q·W[:：]/);
    assert.match(dictionary['walk.cap.additiveB'], /^B = K_h·U[:：]/);
    assert.match(dictionary['walk.cap.additiveW'], /^W[:：]/);
    assert.match(dictionary['walk.cap.additiveU'], /^U[:：]/);
  }
  for (const dictionary of [learnEn, learnZh]) {
    assert.match(dictionary['learn.c3.about.additive'], /q·W \+ k·U/);
    assert.match(dictionary['learn.c3.p1'], /q·W \+ k·U/);
  }
  assert.doesNotMatch(VARIANT_FORMULAS['q.additive'], /W_q|W_k/);
  assert.doesNotMatch(VARIANT_FORMULAS['k.additive'], /W_q|W_k/);
});

test("the backward view names the additive scorer's parameters W, U, v of the head", () => {
  const m = (rows, cols, x = 0.5) => Array.from({ length: rows }, () => Array.from({ length: cols }, () => x));
  const heads = 2;
  const perHead = (rows, cols) => Array.from({ length: heads }, () => m(rows, cols));
  const steps = {
    input: { q: m(3, 4), k: m(3, 4), v: m(3, 4) }, project: { q: m(3, 4), k: m(3, 4), v: m(3, 4) },
    split: { q: perHead(3, 2), k: perHead(3, 2), v: perHead(3, 2) }, scores: perHead(3, 3), softmax: perHead(3, 3),
    weighted_sum: perHead(3, 2), concat: m(3, 4), output: m(3, 4),
  };
  const w = { q: m(4, 4), k: m(4, 4), v: m(4, 4), o: m(4, 4) };
  const gradients = {
    output: m(3, 4), concat: m(3, 4), weighted_sum: perHead(3, 2), v: perHead(3, 2), softmax: perHead(3, 3),
    scores: perHead(3, 3), q: perHead(3, 2), k: perHead(3, 2), w_q: m(4, 4), w_k: m(4, 4), w_v: m(4, 4), w_o: m(4, 4),
    b_q: [0, 0, 0, 0], b_k: [0, 0, 0, 0], b_v: [0, 0, 0, 0], b_o: [0, 0, 0, 0], queries: m(3, 4), keys: m(3, 4), values: m(3, 4),
    additive_w_q: perHead(2, 2), additive_w_k: perHead(2, 2), additive_v: m(2, 2),
  };
  const answer = {
    forward: { steps, n_heads: heads, d_keys: 2, variant: 'additive', weights: w, additive: { w_q: perHead(2, 2), w_k: perHead(2, 2), v: m(2, 2) } },
    gradients, flow: 'softmax',
  };
  const pairs = backwardSteps(answer, 1).find((s) => s.id === 'weights').pairs;
  const symbols = Object.fromEntries(pairs.map((p) => [p.name, [p.forwardSymbol, p.symbol]]));
  assert.deepEqual(symbols.additive_w_q, ['W[1]', 'dW[1]']);
  assert.deepEqual(symbols.additive_w_k, ['U[1]', 'dU[1]']);
  assert.deepEqual(symbols.additive_v, ['v[1]', 'dv[1]']);
  const softmax = backwardSteps(answer, 1).find((s) => s.id === 'softmax').pairs[0];
  assert.deepEqual([softmax.forwardSymbol, softmax.symbol], ['A_1', 'dA_1']);

  // Luong's general score: W_s of the head beside its gradient, and τ in the formulas when τ ≠ 1
  const general = {
    ...answer, forward: { ...answer.forward, variant: 'general', general_w: perHead(2, 2), tau: 1.5 },
    gradients: { ...gradients, additive_w_q: undefined, general_w: perHead(2, 2) },
  };
  const steps2 = backwardSteps(general, 1);
  const weights = steps2.find((s) => s.id === 'weights');
  const ws = weights.pairs.find((p) => p.name === 'general_w');
  assert.deepEqual([ws.forwardSymbol, ws.symbol], ['W_s,1', 'dW_s,1']);
  assert.ok(weights.formula.endsWith('dW_s,h = τ · Q_hᵀ · dS_h · K_h'));
  assert.equal(steps2.find((s) => s.id === 'q').formula, 'dQ_h = τ · dS_h · K_h · W_s,hᵀ');
  const plain = { ...general, forward: { ...general.forward, tau: 1 } };
  assert.equal(backwardSteps(plain, 1).find((s) => s.id === 'k').formula, 'dK_h = dS_hᵀ · Q_h · W_s,h');
});
