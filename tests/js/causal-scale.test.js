// The top of a map's colour scale (static/js/figures/colormap.js scaleTop): a causal model's map at 512 tokens
// shows its later rows, an encoder's map keeps its own maximum. The maps are built here: a near-uniform causal
// head (row q spreads over q + 1 keys, as a random small decoder does), a previous-token head, an encoder head.
import './browser-globals.js';
import test from 'node:test';
import assert from 'node:assert/strict';

import { attentionPixels, isCausalMap, scaleTop, sequential } from '../../static/js/figures/colormap.js';
import { scaleSentence } from '../../static/js/views/explorer-options.js';
import zh from '../../static/js/i18n/zh.js';

const N = 512;

/** Row q: softmax over keys 0..q of small pseudo-random scores (deterministic), 0 above the diagonal. */
function causalMap(n, spread = 0.3) {
  let seed = 7;
  const next = () => { seed = (seed * 1103515245 + 12345) % 2147483648; return seed / 2147483648; };
  return Array.from({ length: n }, (_, q) => {
    const e = Array.from({ length: n }, (_, k) => (k <= q ? Math.exp(spread * next()) : 0));
    const sum = e.reduce((a, b) => a + b, 0);
    return e.map((v) => v / sum);
  });
}

/** The share of the colour bar that a value takes: v / top, clamped to [0, 1]. */
const share = (v, top) => Math.min(v / top, 1);

test('a causal map at 512 tokens: its last rows are not mapped to the bottom few % of the bar', () => {
  const map = causalMap(N);
  assert.equal(isCausalMap(map), true);
  const top = scaleTop(map);
  const plainMax = map.flat().reduce((a, b) => Math.max(a, b), 0);
  assert.ok(plainMax > 0.99, 'row 0 is 1 (the control below needs it)');
  const lastRows = map.slice(-N / 8).flat().filter((v) => v > 0);
  const median = lastRows.sort((a, b) => a - b)[lastRows.length >> 1];
  // the control: the map's own maximum puts the later rows' weights below 1 % of the bar (nearly black)
  assert.ok(share(median, plainMax) < 0.01, `control ${share(median, plainMax)}`);
  // the chosen top lifts them to a visible part of the bar
  assert.ok(share(median, top) > 0.15, `share ${share(median, top)} of the bar at top ${top}`);
  // and on the canvas: the median weight of the last rows is not the colour of 0
  const pixels = attentionPixels([[median]], top);
  assert.notDeepEqual([...pixels.slice(0, 3)], sequential(0));
});

test('a previous-token head keeps its diagonal at the top of a causal scale', () => {
  const map = Array.from({ length: N }, (_, q) => Array.from({ length: N }, (_, k) => {
    if (q === 0) return k === 0 ? 1 : 0;
    return k === q - 1 ? 0.9 : k <= q ? 0.1 / q : 0;
  }));
  assert.equal(isCausalMap(map), true);
  assert.ok(Math.abs(scaleTop(map) - 0.9) < 1e-12);
});

test('an encoder map (weight above the diagonal) keeps its own maximum', () => {
  const causal = causalMap(16);
  const encoder = causal.map((row, q) => row.map((v, k) => (k > q ? 0.001 : v)));
  assert.equal(isCausalMap(encoder), false);
  assert.equal(scaleTop(encoder), Math.max(...encoder.flat()));
  assert.equal(isCausalMap([[1]]), false, 'one token: nothing to tell');
});

test('the large map\'s legend says why a causal map\'s first rows are left out', () => {
  const own = scaleSentence({ kind: 'weight', diff: false, shared: false, gamma: 1, zmax: 0.25, causal: false });
  const causal = scaleSentence({ kind: 'weight', diff: false, shared: false, gamma: 1, zmax: 0.25, causal: true });
  assert.match(own, /largest value, 0\.250/);
  assert.match(causal, /quarter/);
  assert.match(causal, /causal/);
  assert.match(zh['explorer.scale.legendCausal'], /因果/);
});
