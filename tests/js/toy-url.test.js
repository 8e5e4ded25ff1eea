// The /toy page's setup as URL parameters and back (static/js/toy/url.js): only what differs from the
// worked example is written, and a part that cannot be read falls back to the example's and is listed.
import './browser-globals.js';
import test from 'node:test';
import assert from 'node:assert/strict';

import {
  defaultWeights, eye, identity, matrixFromParam, matrixToParam, OPTION_DEFAULTS, readState, widthsOf, writeState,
} from '../../static/js/toy/url.js';

const EXAMPLE = Object.freeze({
  queries: [[1, 0, 2, 1], [0, 1, 1, 2]],
  keys: [[1, 0, 0, 1], [0, 1, 1, 0], [1, 1, 0, 0]],
  values: [[1, 2, 3, 4], [5, 6, 7, 8], [9, 10, 11, 12]],
  heads: 2,
});
const read = (query) => readState(new URLSearchParams(query), EXAMPLE);

test('a matrix as URL text: rows split by ";", numbers by ","; String(x) reads back exactly', () => {
  const matrix = [[1, 0.1, -2.5e-7], [1 / 3, -0, 1e21]];
  assert.equal(matrixToParam([[1, 0.5], [-2, 3]]), '1,0.5;-2,3');
  assert.deepEqual(matrixFromParam(matrixToParam(matrix)), [[1, 0.1, -2.5e-7], [1 / 3, 0, 1e21]]);
  assert.deepEqual(matrixFromParam('−1,+2,.5'), [[-1, 2, 0.5]]); // a typed minus sign reads too
});

test('matrixFromParam refuses ragged rows, text, empty cells and more than 64 rows or columns', () => {
  assert.equal(matrixFromParam('1,2;3'), null);
  assert.equal(matrixFromParam('1,x'), null);
  assert.equal(matrixFromParam('1,,2'), null);
  assert.equal(matrixFromParam('1e999'), null);
  assert.equal(matrixFromParam(Array(65).fill('1').join(';')), null);
  assert.equal(matrixFromParam(Array(65).fill('1').join(',')), null);
  assert.equal(matrixFromParam(Array(64).fill('1').join(';')).length, 64);
});

test('widths and default weights: d_model / heads per head unless d_keys or d_values say otherwise', () => {
  assert.deepEqual(widthsOf(4, 2), { keys: 4, values: 4 });
  assert.deepEqual(widthsOf(3, 2), { keys: 3, values: 3 }); // heads do not divide d_model: d_model wide
  assert.deepEqual(widthsOf(4, 2, 3, 1), { keys: 6, values: 2 });
  assert.deepEqual(defaultWeights(2, 1), { q: identity(2), k: identity(2), v: identity(2), o: identity(2) });
  assert.deepEqual(defaultWeights(2, 2, 2, 1), { q: eye(2, 4), k: eye(2, 4), v: eye(2, 2), o: eye(2, 2) });
  assert.deepEqual(eye(2, 3), [[1, 0, 0], [0, 1, 0]]);
});

test('an empty URL is the worked example with the default mechanisms', () => {
  const state = read('');
  assert.deepEqual(
    { queries: state.queries, keys: state.keys, values: state.values, heads: state.heads },
    { queries: EXAMPLE.queries, keys: EXAMPLE.keys, values: EXAMPLE.values, heads: 2 },
  );
  assert.deepEqual(state.weights, defaultWeights(4, 2));
  for (const [name, value] of Object.entries(OPTION_DEFAULTS)) assert.deepEqual(state[name], value, name);
  assert.deepEqual(
    [state.causal, state.compare, state.shuffle, state.backward, state.upstream, state.head, state.query, state.step],
    [false, false, false, false, 'ones', 0, 0, 'input'],
  );
  assert.deepEqual(state.unreadable, []);
  assert.equal(writeState(state, EXAMPLE).toString(), '');
});

test('only what differs from the example is written, with "," and ";" left readable, and it reads back', () => {
  const state = {
    ...read(''),
    queries: [[1, 2, 3, 4], [5, 6, 7, 8]],
    heads: 1,
    causal: true,
    variant: 'gumbel',
    temperature: 0.5,
    seed: 3,
    straightThrough: true,
    positions: 'rope',
    hidden: [1, 2],
    head: 0,
    query: 1,
    step: 'scores',
  };
  state.weights = defaultWeights(4, 1);
  const params = writeState(state, EXAMPLE);
  assert.equal(params.toString(), 'q=1,2,3,4;5,6,7,8&heads=1&causal=1&variant=gumbel&temperature=0.5&seed=3'
    + '&straight_through=1&positions=rope&hidden=1,2&query=1&step=scores');
  const back = readState(new URLSearchParams(params.toString()), EXAMPLE);
  assert.deepEqual(back, { ...state, unreadable: [] });
});

test('unreadable parts fall back to the example and are listed in the setup panel order', () => {
  // Read in the code's order (heads, d_keys before keys); listed in the panel's (keys, heads, d_keys).
  const state = read('d_keys=99&heads=abc&k=1,x&variant=nope&temperature=0&upstream=all');
  assert.deepEqual(state.unreadable, ['keys', 'n_heads', 'variant', 'temperature', 'd_keys', 'upstream']);
  assert.deepEqual(
    [state.keys, state.heads, state.variant, state.temperature, state.dKeys, state.upstream],
    [EXAMPLE.keys, 2, 'scaled_dot', 1, null, 'ones'],
  );
});

test('lists, flags, steps and indices are read strictly', () => {
  const state = read('hidden=3,1,3&causal=1&straight_through=0&seed=2147483647&step=softmax&head=1&query=2');
  assert.deepEqual(state.hidden, [1, 3]); // sorted, each once
  assert.deepEqual([state.causal, state.straightThrough, state.seed], [true, false, 2147483647]);
  assert.deepEqual([state.step, state.head, state.query], ['softmax', 1, 2]);
  const odd = read('causal=yes&seed=2147483648&step=bogus&head=-1');
  assert.deepEqual(odd.unreadable, ['causal', 'seed']);
  assert.deepEqual([odd.causal, odd.seed, odd.step, odd.head], [false, 0, 'input', 0]);
});

test('ProbSparse\'s factor, cosine\'s scale and the de-stationary τ, δ live in the URL and read back', () => {
  const state = read('variant=probsparse&factor=2&tau=1.5&delta=0,1,-0.5,2');
  assert.deepEqual([state.variant, state.factor, state.tau, state.delta], ['probsparse', 2, 1.5, [0, 1, -0.5, 2]]);
  const params = writeState({ ...state, step: 'input' }, EXAMPLE);
  assert.equal(params.toString(), 'variant=probsparse&factor=2&tau=1.5&delta=0,1,-0.5,2');
  // the factor belongs to probsparse and the scale to cosine: another variant does not write them
  assert.equal(writeState({ ...state, variant: 'dot', scale: 3, step: 'input' }, EXAMPLE).toString(),
    'variant=dot&tau=1.5&delta=0,1,-0.5,2');
  const cosine = read('variant=cosine&scale=3&delta=0.5');
  assert.deepEqual([cosine.scale, cosine.delta], [3, 0.5]);
  assert.equal(writeState({ ...cosine, step: 'input' }, EXAMPLE).toString(), 'variant=cosine&scale=3&delta=0.5');
  const odd = read('factor=0&scale=-1&tau=x&delta=1,,2');
  assert.deepEqual(odd.unreadable, ['scale', 'tau', 'delta']); // factor 0 reads as a whole number: the server refuses it
  assert.deepEqual([odd.scale, odd.tau, odd.delta], [null, 1, 0]);
});
