// Decoders of the Llama family in the walkthrough and the explorer (static/js/figures/kv-groups.js and
// figures/steps.js): which key-value head serves which query heads, RoPE's angles, and the split step of a
// RoPE model's trace (q and k before and after the rotation; the scores made of the rotated ones).
import './browser-globals.js';
import test from 'node:test';
import assert from 'node:assert/strict';

import { isGrouped, kvGroup, kvRuns } from '../../static/js/figures/kv-groups.js';
import {
  fromTrace, queryKeySpec, ropeAngles, ropeScalingText, scoredSplit, splitFacts, stepSpec, stepVariant,
} from '../../static/js/figures/steps.js';

test('kvGroup: head h reads key-value head ⌊h / (H/G)⌋, shared with the H/G heads in a row', () => {
  assert.deepEqual(kvGroup(3, 4, 2), { kv: 1, heads: [2, 3], others: [2] });
  assert.deepEqual(kvGroup(0, 4, 2), { kv: 0, heads: [0, 1], others: [1] });
  assert.deepEqual(kvGroup(2, 4, 1), { kv: 0, heads: [0, 1, 2, 3], others: [0, 1, 3] }); // multi-query
  assert.deepEqual(kvGroup(5, 14, 2), { kv: 0, heads: [0, 1, 2, 3, 4, 5, 6], others: [0, 1, 2, 3, 4, 6] });
  assert.deepEqual(kvGroup(5, 12, 12), { kv: 5, heads: [5], others: [] }); // multi-head attention
  assert.equal(isGrouped(4, 2), true);
  assert.equal(isGrouped(12, 12), false);
  assert.equal(isGrouped(12, null), false);
  assert.equal(isGrouped(12, 5), false); // not a divisor: no groups are made up
});

test('kvRuns: neighbouring drawn heads of one key-value head; none for multi-head attention', () => {
  assert.deepEqual(kvRuns([0, 1, 2, 3], 4, 2), [{ kv: 0, start: 0, count: 2 }, { kv: 1, start: 2, count: 2 }]);
  assert.deepEqual(kvRuns([0, 1, 2, 3, 4, 5], 6, 3).map((r) => r.kv), [0, 1, 2]);
  assert.deepEqual(kvRuns([1, 2], 4, 2), [{ kv: 0, start: 0, count: 1 }, { kv: 1, start: 1, count: 1 }]);
  assert.deepEqual(kvRuns([0, 1, 2, 3], 4, 4), []);
  assert.deepEqual(kvRuns([0, 1, 2, 3], 4, 1), [{ kv: 0, start: 0, count: 4 }]);
});

test('ropeAngles: p·f_i for each pair; ropeScalingText says the scaling that was used', () => {
  const f = [1, 10000 ** (-2 / 8), 10000 ** (-4 / 8), 10000 ** (-6 / 8)];
  assert.deepEqual(ropeAngles(f, 0), [0, 0, 0, 0]);
  ropeAngles(f, 7).forEach((a, i) => assert.ok(Math.abs(a - 7 * f[i]) < 1e-12));
  assert.equal(ropeScalingText({ theta: 10000, scaling: null, frequencies: f }), '');
  assert.match(ropeScalingText({ scaling: { kind: 'linear', factor: 2 } }), /linear scaling: divided by 2$/);
  const llama3 = ropeScalingText({ scaling: { kind: 'llama3', factor: 8, low_freq_factor: 1, high_freq_factor: 4, original_max_positions: 32 } });
  assert.match(llama3, /llama3 scaling: divided by 8 where the wavelength 2π\/θ_i is over 32, kept where it is under 8/);
});

/** A trace as /api/v1/trace answers for one head of a RoPE model with 4 query heads and 2 key-value heads. */
function ropeTrace(head = 3) {
  const n = 3;
  const dHead = 4;
  const m = (seed, rows, cols) => Array.from({ length: rows }, (_, i) => Array.from({ length: cols }, (_, j) => Math.sin(seed + 3 * i + j)));
  const frequencies = [1, 0.01];
  const turn = (x) => x.map((row, p) => row.map((v, j) => {
    const i = j % 2; const a = p * frequencies[i];
    return j < 2 ? v * Math.cos(a) - row[j + 2] * Math.sin(a) : v * Math.cos(a) + row[j - 2] * Math.sin(a);
  }));
  const q = m(1, n, dHead);
  const k = m(2, n, dHead);
  const dot = (a, b) => a.map((r) => b.map((s) => r.reduce((sum, x, d) => sum + x * s[d], 0)));
  const tokens = ['a', 'b', 'c'].map((text) => ({ text, display: text, start: 0, end: 1, special: false, segment: 0 }));
  return {
    model: 'tiny-llama', tokens, layer: 0, d_model: 16, n_heads: 4, d_head: dHead, heads: [head], kv_head: [Math.floor(head / 2)], scale: 0.5,
    rope: { theta: 10000, scaling: null, frequencies },
    steps: {
      input: m(0, n, 16),
      project: { q: m(3, n, 16), k: m(4, n, 8), v: m(5, n, 8) },
      split: { q: [q], k: [k], v: [m(6, n, dHead)] },
      scores: [dot(turn(q), turn(k))],
      scale: [dot(turn(q), turn(k))], mask: [dot(turn(q), turn(k))], softmax: [m(7, n, n)],
      weighted_sum: [m(8, n, dHead)], concat: m(9, n, 16), output: m(10, n, 16),
    },
    rotated: { q: [turn(q)], k: [turn(k)] },
  };
}

const itemOf = (spec, key) => spec.items.find((item) => item.key === key);
const captionText = (item) => (Array.isArray(item.caption) ? item.caption.map((p) => (typeof p === 'string' ? p : p.data)).join('') : item.caption);

test('a RoPE trace: the split step draws q and k before and after the rotation, and the query\'s angles', () => {
  const T = fromTrace(ropeTrace(3), { nKvHeads: 2 });
  assert.equal(stepVariant(T, 'split'), 'ropeGrouped');
  assert.equal(stepVariant(fromTrace(ropeTrace(3), { nKvHeads: 4 }), 'split'), 'ropeModel');
  const spec = stepSpec(T, 'split', { head: 3, query: 2, width: 1400 });
  assert.deepEqual(itemOf(spec, 'split-q').figure.data[0].z, T.steps.split.q[0]);
  assert.deepEqual(itemOf(spec, 'split-q-rotated').figure.data[0].z, T.rotated.q[0]);
  assert.deepEqual(itemOf(spec, 'split-k-rotated').figure.data[0].z, T.rotated.k[0]);
  assert.equal(itemOf(spec, 'split-v-rotated'), undefined); // V is not turned
  const angles = itemOf(spec, 'split-angles');
  assert.deepEqual(angles.figure.data[0].z, [[2, 0.02]]);
  assert.equal(captionText(angles), 'angles p·θ_i in radians at position p = 2 (query “c”), one per pair i of columns i and i + 2: i = 0: 2 · i = 1: 0.02 · θ_i = 10000^(−2i/4)');
  // head 3 reads key-value head 1: K's and V's columns 4–7 of their 8, not Q's 12–15
  assert.match(captionText(itemOf(spec, 'split-k')), /^K\[:, 4:8\] · head 3 · 3×4 · before RoPE/);
  assert.match(captionText(itemOf(spec, 'split-k-full')), /2 slices of 4/);
  assert.match(captionText(itemOf(spec, 'split-q-full')), /4 slices of 4/);
  const project = stepSpec(T, 'project', { head: 3, query: 2, width: 1400 });
  assert.match(captionText(itemOf(project, 'project-v')), /key-value head 1's columns 4–7 outlined, which head 3 reads/);
  assert.match(captionText(itemOf(project, 'project-q')), /head 3's columns 12–15 outlined/);
  assert.deepEqual(splitFacts(T, 3), { nKvHeads: 2, kv: 1, others: '2', theta: 10000, scaling: '', half: 2 });
});

test('a RoPE trace: the scores and the query/key view use the rotated q and k', () => {
  const T = fromTrace(ropeTrace(1), { nKvHeads: 2 });
  assert.equal(scoredSplit(T).q, T.rotated.q);
  const spec = stepSpec(T, 'scores', { head: 1, query: 1, width: 1400 });
  assert.deepEqual(itemOf(spec, 'scores-q').figure.data[0].z, T.rotated.q[0]);
  const qk = queryKeySpec(T, { head: 1, query: 2 });
  qk.sums.forEach((s, j) => assert.ok(Math.abs(s - T.steps.scores[0][2][j]) < 1e-12));
});

test('a trace without RoPE or groups keeps the plain split step', () => {
  const trace = ropeTrace(1);
  delete trace.rotated;
  delete trace.rope;
  delete trace.kv_head;
  trace.steps.project.k = trace.steps.project.q;
  trace.steps.project.v = trace.steps.project.q;
  const T = fromTrace(trace, { nKvHeads: 4 });
  assert.equal(stepVariant(T, 'split'), null);
  assert.equal(T.positions, 'none');
  const spec = stepSpec(T, 'split', { head: 1, query: 0, width: 1400 });
  assert.deepEqual(spec.items.map((item) => item.key).filter(Boolean), ['split-q-full', 'split-q', 'split-k-full', 'split-k', 'split-v-full', 'split-v']);
  assert.match(captionText(itemOf(spec, 'split-k')), /^K_h = K\[:, 4:8\]/);
});

test('the angles caption lists the pairs it lists with an ellipsis where it skips, as the chart writes them', () => {
  // d_head 8: four pairs with θ_i = 10000^(−2i/8), worked out here; at position 5 the angles are 5, 0.5, 0.05, 0.005
  const [n, dHead, base, position] = [6, 8, 10000, 5];
  const m = (seed, rows, cols) => Array.from({ length: rows }, (_, i) => Array.from({ length: cols }, (_, j) => Math.sin(seed + 3 * i + j)));
  const square = (seed) => [m(seed, n, n)];
  const trace = {
    model: 'tiny-mistral', layer: 0, d_model: 32, n_heads: 4, d_head: dHead, heads: [1], kv_head: [0], scale: 0.35,
    tokens: Array.from({ length: n }, (_, p) => ({ text: `t${p}`, display: `t${p}`, start: p, end: p + 1, special: false, segment: 0 })),
    rope: { theta: base, scaling: null, frequencies: [0, 1, 2, 3].map((i) => base ** (-2 * i / dHead)) },
    steps: {
      input: m(0, n, 32), project: { q: m(1, n, 32), k: m(2, n, 16), v: m(3, n, 16) },
      split: { q: [m(4, n, dHead)], k: [m(5, n, dHead)], v: [m(6, n, dHead)] },
      scores: square(7), scale: square(7), mask: square(7), softmax: square(8), weighted_sum: [m(9, n, dHead)],
      concat: m(10, n, 32), output: m(11, n, 32),
    },
    rotated: { q: [m(12, n, dHead)], k: [m(13, n, dHead)] },
  };
  const item = itemOf(stepSpec(fromTrace(trace, { nKvHeads: 2 }), 'split', { head: 1, query: position, width: 1400 }), 'split-angles');
  const said = captionText(item).match(/: (i = .*) · θ_i/)[1].split(' · ');
  const exact = [0, 1, 2, 3].map((i) => position * base ** (-2 * i / dHead));
  // pairs 0 and 1, an ellipsis for pair 2, then the last pair: never a jump without one
  assert.deepEqual(said.map((part) => (part === '…' ? null : Number(part.match(/^i = (\d+):/)[1]))), [0, 1, null, 3]);
  const drawn = item.figure.data[0].text[0]; // the numbers written in the chart's cells
  for (const part of said.filter((p) => p !== '…')) {
    const [, i, value] = part.match(/^i = (\d+): (.+)$/);
    assert.equal(value, drawn[Number(i)], `pair ${i}: the caption and the chart write the same number`);
    const decimals = (value.split('.')[1] ?? '').length; // and that number is the angle, rounded to what it shows
    assert.ok(Math.abs(Number(value) - exact[Number(i)]) <= 0.5 * 10 ** -decimals + 1e-12, `${value} vs ${exact[i]}`);
  }
});
