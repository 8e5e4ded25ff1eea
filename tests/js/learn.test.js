// The learning path's pure modules: the √d_k saturation demo (static/js/learn/saturation.js) against the
// formulas it illustrates, written here, the progress kept in storage (static/js/learn/progress.js), and the
// numbers the later chapters work out (static/js/learn/measures.js) against the definitions, written out here
// on matrices small enough to check by hand.
import './browser-globals.js';
import test from 'node:test';
import assert from 'node:assert/strict';

import { WIDTHS, gaussian, sampleRow, saturation, saturationFigure, seededRandom } from '../../static/js/learn/saturation.js';
import { CHAPTERS, SEEN_KEY, markSeen, nextUnseen, readSeen, readText, resetSeen, storeText } from '../../static/js/learn/progress.js';
import {
  linearAttention, maxAbsDiff, phi, repeatScores, repeatedHalves, rowSpread, strongest, tileOrder,
} from '../../static/js/learn/measures.js';

const mean = (xs) => xs.reduce((s, x) => s + x, 0) / xs.length;
const variance = (xs) => mean(xs.map((x) => (x - mean(xs)) ** 2));

test('the normal draws have mean 0 and variance 1', () => {
  const random = seededRandom(42);
  const xs = Array.from({ length: 40000 }, () => gaussian(random));
  assert.ok(Math.abs(mean(xs)) < 0.02, `mean ${mean(xs)}`);
  assert.ok(Math.abs(variance(xs) - 1) < 0.03, `variance ${variance(xs)}`);
});

test('a sampled row: scores are dot products, scaled by 1/√d, and the weights are their softmax', () => {
  const d = 16;
  const row = sampleRow(d, 5, seededRandom(3));
  assert.equal(row.query.length, d);
  assert.equal(row.keys.length, 5);
  row.keys.forEach((key, j) => {
    let s = 0;
    for (let i = 0; i < d; i += 1) s += row.query[i] * key[i];
    assert.ok(Math.abs(row.raw[j] - s) < 1e-12);
    assert.ok(Math.abs(row.scaled[j] - s / 4) < 1e-12); // √16 = 4
  });
  // softmax written out here: exp(s_j) / Σ exp(s_k)
  const expected = (scores) => scores.map((s) => Math.exp(s) / scores.reduce((acc, x) => acc + Math.exp(x), 0));
  expected(row.scaled).forEach((w, j) => assert.ok(Math.abs(row.scaledWeights[j] - w) < 1e-12));
  expected(row.raw).forEach((w, j) => assert.ok(Math.abs(row.rawWeights[j] - w) < 1e-9));
  assert.ok(Math.abs(row.rawWeights.reduce((a, b) => a + b, 0) - 1) < 1e-12);
});

test('raw scores spread like √d, scaled ones like 1, and only the unscaled softmax saturates', () => {
  const points = saturation([1, 4, 64, 1024], { keys: 8, trials: 400, seed: 5 });
  for (const p of points) {
    // Var(q·k) = Σ_i Var(q_i k_i) = d for independent N(0, 1) entries: the spread is √d
    assert.ok(Math.abs(p.rawSpread / Math.sqrt(p.d) - 1) < 0.1, `d = ${p.d}: spread ${p.rawSpread}`);
    assert.ok(Math.abs(p.scaledSpread - 1) < 0.1, `d = ${p.d}: scaled spread ${p.scaledSpread}`);
    assert.ok(p.rawMax >= 1 / 8 && p.rawMax <= 1 && p.scaledMax >= 1 / 8 && p.scaledMax <= 1);
  }
  const [d1, d4, d64, d1024] = points;
  assert.ok(Math.abs(d1.rawMax - d1.scaledMax) < 1e-12, 'at d = 1 scaling changes nothing');
  assert.ok(d4.rawMax < d64.rawMax && d64.rawMax < d1024.rawMax, 'unscaled: the top weight grows with d');
  assert.ok(d1024.rawMax > 0.95, `unscaled at d = 1024: ${d1024.rawMax}`);
  // scaled: the scores are N(0, 1) at every d, so the top weight stays where it is (within sampling noise)
  assert.ok(Math.abs(d1024.scaledMax - d4.scaledMax) < 0.05, `${d4.scaledMax} vs ${d1024.scaledMax}`);
  assert.ok(d1024.scaledMax < 0.6);
});

test('the same seed gives the same curve', () => {
  assert.deepEqual(saturation([8, 32], { trials: 20, seed: 9 }), saturation([8, 32], { trials: 20, seed: 9 }));
  assert.deepEqual(WIDTHS, [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024]);
});

test('the figure draws both curves and marks the chosen width on them', () => {
  const points = saturation([1, 8, 64], { trials: 10 });
  const figure = saturationFigure(points, 8);
  assert.deepEqual(figure.data[0].x, [1, 8, 64]);
  assert.deepEqual(figure.data[0].y, points.map((p) => p.rawMax));
  assert.deepEqual(figure.data[1].y, points.map((p) => p.scaledMax));
  assert.deepEqual(figure.data[3].x, [8, 8]);
  assert.deepEqual(figure.data[3].y, [points[1].rawMax, points[1].scaledMax]);
  assert.equal(figure.layout.xaxis.type, 'log');
});

function memory() {
  const items = new Map();
  return {
    getItem: (k) => (items.has(k) ? items.get(k) : null),
    setItem: (k, v) => items.set(k, String(v)),
    removeItem: (k) => items.delete(k),
  };
}

test('progress: chapters seen are kept once each, sorted, and bad data counts as none', () => {
  const storage = memory();
  assert.deepEqual(readSeen(storage), []);
  assert.equal(nextUnseen([]), 1);
  markSeen(storage, 3);
  markSeen(storage, 1);
  markSeen(storage, 3);
  markSeen(storage, 0);
  markSeen(storage, CHAPTERS + 1);
  assert.deepEqual(readSeen(storage), [1, 3]);
  assert.equal(storage.getItem(SEEN_KEY), '[1,3]');
  assert.equal(nextUnseen(readSeen(storage)), 2);
  assert.equal(CHAPTERS, 17);
  assert.equal(nextUnseen([1, 2, 3, 4, 5, 6, 7, 8, 9]), 10);
  assert.equal(nextUnseen(Array.from({ length: 17 }, (_, i) => i + 1)), null);
  assert.equal(SEEN_KEY, 'attnscope.learn.seen.12', 'the nine-chapter numbering (attnscope.learn.seen) is not read');
  storage.setItem(SEEN_KEY, 'not json');
  assert.deepEqual(readSeen(storage), []);
  storage.setItem(SEEN_KEY, '[2, "x", 2.5, 9]');
  assert.deepEqual(readSeen(storage), [2, 9]);
  resetSeen(storage);
  assert.deepEqual(readSeen(storage), []);
});

test('progress: the sentence is kept, a blank one is not, and a refusing storage is survived', () => {
  const storage = memory();
  assert.equal(readText(storage), null);
  storeText(storage, 'The cat sat.');
  storeText(storage, '   ');
  assert.equal(readText(storage), 'The cat sat.');
  const refusing = { getItem() { throw new Error('off'); }, setItem() { throw new Error('off'); }, removeItem() { throw new Error('off'); } };
  assert.deepEqual(readSeen(refusing), []);
  assert.deepEqual(markSeen(refusing, 2), [2]);
  assert.equal(readText(refusing), null);
  storeText(refusing, 'x');
  resetSeen(refusing);
});

test('contexts: the spread is the largest gap between two rows in one column', () => {
  assert.equal(rowSpread([[1, 5], [1, 5]]), 0);
  assert.equal(rowSpread([[1, 5], [4, 4], [2, 7]]), 3); // column 0: 4 − 1; column 1: 7 − 4
});

test('linear attention from its state equals φ(q)·φ(k) / Σ times V, written out with an N × N matrix', () => {
  const q = [[1, -2], [0.5, 0], [-1, 3]];
  const k = [[0, 1], [-0.5, 2], [2, -1], [1, 1]];
  const v = [[1, 2, 3], [0, -1, 4], [2, 2, 2], [-3, 1, 0]];
  assert.equal(phi(2), 3);
  assert.equal(phi(0), 1);
  assert.ok(Math.abs(phi(-1) - Math.exp(-1)) < 1e-15);
  const fq = q.map((r) => r.map((x) => (x > 0 ? x + 1 : Math.exp(x))));
  const fk = k.map((r) => r.map((x) => (x > 0 ? x + 1 : Math.exp(x))));
  const scores = fq.map((a) => fk.map((b) => a[0] * b[0] + a[1] * b[1])); // (3, 4), all > 0
  const weights = scores.map((row) => row.map((s) => s / row.reduce((x, y) => x + y, 0)));
  const expected = weights.map((row) => [0, 1, 2].map((j) => row.reduce((s, w, i) => s + w * v[i][j], 0)));
  const { state, normaliser, output } = linearAttention(q, k, v);
  assert.equal(state.length, 2); // d_keys × d_values, whatever the number of keys
  assert.equal(state[0].length, 3);
  assert.equal(normaliser.length, 2);
  assert.ok(maxAbsDiff(output, expected) < 1e-12, `${maxAbsDiff(output, expected)}`);
  assert.ok(Math.abs(normaliser[1] - fk.reduce((s, r) => s + r[1], 0)) < 1e-15);
});

test('the tiles are numbered in the order computed, each covering its rows and keys', () => {
  const tiles = [{ rows: [0, 2], cols: [0, 3] }, { rows: [0, 2], cols: [3, 4] }, { rows: [2, 3], cols: [0, 3] }, { rows: [2, 3], cols: [3, 4] }];
  assert.deepEqual(tileOrder(tiles, 3, 4), [[1, 1, 1, 2], [1, 1, 1, 2], [3, 3, 3, 4]]);
});

test('a text written twice: its halves, and the three scores of made-up heads that do each job exactly', () => {
  const token = (text, special = false) => ({ text, special });
  const twice = ['[CLS]', 'a', 'b', 'c', 'a', 'b', 'c', '[SEP]'].map((x) => token(x, x.startsWith('[')));
  assert.deepEqual(repeatedHalves(twice), { start: 1, half: 3 });
  assert.equal(repeatedHalves(['[CLS]', 'a', 'b', 'c', 'a', 'c', 'b', '[SEP]'].map((x) => token(x, x.startsWith('[')))), null);
  assert.equal(repeatedHalves([token('[CLS]', true), token('a'), token('[SEP]', true)]), null);
  const n = twice.length;
  const { start, half } = repeatedHalves(twice);
  // head 0: every row on the token before; head 1: on the same token the first time (itself before that);
  // head 2: on the token after it the first time (itself before that); head 3: even over all n tokens
  const target = (head, i) => {
    if (head === 0) return Math.max(i - 1, 0);
    if (i < start + half || i >= start + 2 * half) return i;
    return head === 1 ? i - half : i - half + 1;
  };
  const weight = (i, j, layer, head) => (head === 3 ? 1 / n : Number(j === target(head, i)));
  const scores = repeatScores(weight, 1, 4, { start, half });
  assert.deepEqual(scores.previous[0].slice(0, 3), [1, 0, 0]);
  assert.deepEqual(scores.duplicate[0].slice(0, 3), [0, 1, 0]);
  assert.deepEqual(scores.induction[0].slice(0, 3), [0, 0, 1]);
  for (const kind of ['previous', 'duplicate', 'induction']) assert.ok(Math.abs(scores[kind][0][3] - 1 / n) < 1e-15);
  assert.deepEqual(strongest(scores.induction), { layer: 0, head: 2, value: 1 });
});
