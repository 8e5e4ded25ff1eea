// The /toy page's words for the server's refusals (static/js/toy/errors.js), in English: where each error
// item points (its loc) and what its problem is (the dictionary's toy.problem.<type>, filled from ctx).
import './browser-globals.js';
import test from 'node:test';
import assert from 'node:assert/strict';

import { describeErrors, fieldOf, listOf, placeName, rowLabel } from '../../static/js/toy/errors.js';
import en from '../../static/js/i18n/en.js';

test('fieldOf: a matrix cell, row or whole matrix, with or without the leading "body"', () => {
  assert.deepEqual(fieldOf(['body', 'queries', '1', '2']), { kind: 'matrix', name: 'queries', row: 1, col: 2 });
  assert.deepEqual(fieldOf(['body', 'keys', 0]), { kind: 'matrix', name: 'keys', row: 0, col: null });
  assert.deepEqual(fieldOf(['values']), { kind: 'matrix', name: 'values', row: null, col: null });
  assert.deepEqual(fieldOf(['body', 'queries', 'x']), { kind: 'matrix', name: 'queries', row: null, col: null });
});

test('fieldOf: the weights are the matrices wq, wk, wv and wo; another weight name is the request', () => {
  assert.deepEqual(fieldOf(['body', 'weights', 'q', '0', '3']), { kind: 'matrix', name: 'wq', row: 0, col: 3 });
  assert.deepEqual(fieldOf(['body', 'weights', 'o']), { kind: 'matrix', name: 'wo', row: null, col: null });
  assert.deepEqual(fieldOf(['body', 'weights', 'x']), { kind: 'request' });
});

test('fieldOf: options are their own fields, the additive parameters belong to the variant, the rest is the request', () => {
  for (const name of ['n_heads', 'causal', 'variant', 'temperature', 'seed', 'straight_through', 'd_keys', 'd_values',
    'positions', 'hidden_keys']) {
    assert.deepEqual(fieldOf(['body', name]), { kind: name });
  }
  assert.deepEqual(fieldOf(['body', 'additive', 'w']), { kind: 'variant' });
  assert.deepEqual(fieldOf(['body']), { kind: 'request' });
  assert.deepEqual(fieldOf(['body', 'other']), { kind: 'request' });
  assert.deepEqual(fieldOf(null), { kind: 'request' });
});

test('placeName names a place as the editors label it: q rows for queries, k rows for keys and values', () => {
  assert.equal(placeName('queries'), 'Queries');
  assert.equal(placeName('queries', 1, 2), 'Queries, row q1, column 2');
  assert.equal(placeName('keys', 0), 'Keys, row k0');
  assert.equal(placeName('values', 3, 0), 'Values, row k3, column 0');
  assert.equal(placeName('wq', 2, 1), 'W_q, row 2, column 1');
});

test('rowLabel labels query rows q0…, key and value rows k0…, and weights not at all', () => {
  assert.equal(rowLabel('queries')(3), 'q3');
  assert.equal(rowLabel('keys')(0), 'k0');
  assert.equal(rowLabel('values')(2), 'k2');
  assert.equal(rowLabel('wk'), null);
});

test('listOf writes an English list', () => {
  assert.equal(listOf([1, 2, 4], 'disjunction'), '1, 2, or 4');
  assert.equal(listOf(['q', 'k'], 'conjunction'), 'q and k');
});

test('describeErrors: a cell left empty (sent as null) says so, a cell of text is not a number', () => {
  const item = { loc: ['body', 'queries', 1, 0], type: 'float_type', msg: 'Input should be a valid number' };
  const [empty] = describeErrors([item], { queries: [[1, 2], [null, 3]] });
  assert.deepEqual(empty, {
    field: { kind: 'matrix', name: 'queries', row: 1, col: 0 },
    problem: en['toy.problem.empty'],
    text: 'Queries, row q1, column 0: empty; type a number',
  });
  const [text] = describeErrors([item], { queries: [[1, 2], ['abc', 3]] });
  assert.equal(text.problem, en['toy.problem.float_type']);
  assert.equal(text.text, `Queries, row q1, column 0: ${en['toy.problem.float_type']}`);
});

test("describeErrors fills the problem from the item's ctx, numbers written the English way", () => {
  const items = [
    { loc: ['body', 'n_heads'], type: 'toy_heads_divide', ctx: { d_model: 6 } },
    { loc: ['body', 'keys', '2', '1'], type: 'toy_magnitude', ctx: { max: 1000000 } },
    { loc: ['body', 'temperature'], type: 'toy_temperature', ctx: { min: 0.05 } },
  ];
  assert.deepEqual(describeErrors(items, {}).map((error) => error.text), [
    'Heads: must divide d_model (6); use 1, 2, 3, or 6', // divisors of d_model, as a list
    'Keys, row k2, column 1: too large in magnitude (at most 1,000,000); scale it down',
    'Temperature: must be a number of at least 0.05',
  ]);
});

test("describeErrors falls back to the server's msg for an unknown type, and else to a general problem", () => {
  const errors = describeErrors([
    { loc: ['body', 'seed'], type: 'brand_new', msg: 'Seed too odd' },
    { loc: [], type: 'brand_new' },
  ], {});
  assert.deepEqual(errors.map((error) => error.text), ['Seed: Seed too odd', `The request: ${en['toy.problem.invalid']}`]);
  assert.deepEqual(errors.map((error) => error.field), [{ kind: 'seed' }, { kind: 'request' }]);
});
