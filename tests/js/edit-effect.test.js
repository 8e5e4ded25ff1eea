// What the explorer says an edit changed (static/js/views/explorer-effect.js), on answers shaped as
// POST /api/v1/edit/effect sends them: the counts, the lazy rows' rule, the token that changed most, each layer's
// mean over heads, the next token, and which rows of which head the large map marks.
import './browser-globals.js';
import test from 'node:test';
import assert from 'node:assert/strict';

import { activeRows, effectSentences } from '../../static/js/views/explorer-effect.js';

const token = (text) => ({ text, display: text, start: 0, end: 1, special: false, segment: 0, unknown: false });
const tokens = ['the', 'cat', 'sat', '<b>on', 'the', 'mat'].map(token);

const answer = (over = {}) => ({
  model: 'tiny', tokens, layers: [1, 2],
  row_change_mean: [[0.5, 0.3], [0.1, 0.2]], row_change_max: [[0.9, 0.6], [0.3, 0.4]],
  hidden_by_token: [0.1, 0.4, 0.2, 0.05, 0.0, 0.3], hidden_relative: 0.25, next_token: null,
  probsparse: { factor: 1, seed: 0, heads: [0, 1], measure: [[], []], active: [[1, 3], [0, 5]], lazy: 'mean' },
  ...over,
});

test('a ProbSparse edit: u of N active, the rest the mean or the sum of V', () => {
  const [first, hidden, layers] = effectSentences(answer());
  assert.match(first, /layer 1 \(c = 1\): 2 of 6 queries .* the other 4 get the mean of V/);
  assert.match(hidden, /= 0\.250; the token that changed most: “cat” \(0\.400\)/);
  assert.match(layers, /layer 1 0\.400, layer 2 0\.150\./); // each layer's mean over its heads
  const causal = effectSentences(answer({ probsparse: { ...answer().probsparse, lazy: 'sum' } }))[0];
  assert.match(causal, /cumulative sum of V/);
  const full = effectSentences(answer({ probsparse: { ...answer().probsparse, active: [[0, 1, 2, 3, 4, 5]] } }))[0];
  assert.match(full, /reaches all 6 queries, .* full attention/);
});

test('the next token: kept or changed, with what the edit left of it', () => {
  const choice = (id, display, probability) => ({ id, token: display, display, probability });
  const same = { kl: 0.01234, before: choice(7, 'dog', 0.6), after: choice(7, 'dog', 0.55), before_probability_after: 0.55 };
  const lines = effectSentences(answer({ probsparse: null, next_token: same }));
  assert.equal(lines.length, 3); // no ProbSparse line
  assert.match(lines[2], /“dog” stays the most probable, 60\.0 % → 55\.0 %; KL\(p ‖ p′\) = 0\.012 nats/);
  const changed = { ...same, after: choice(9, '<i>cat', 0.4), before_probability_after: 0.1 };
  assert.match(effectSentences(answer({ next_token: changed }))[3],
    /“dog” \(60\.0 %\) becomes “<i>cat” \(40\.0 %\); “dog” keeps 10\.0 %/);
});

test('the marked rows: the edited layer and an edited head only', () => {
  const effect = answer();
  assert.deepEqual(activeRows(effect, 1, 1), [0, 5]);
  assert.equal(activeRows(effect, 2, 1), null); // a later layer: nothing was chosen there
  assert.equal(activeRows({ ...effect, probsparse: { ...effect.probsparse, heads: [3] } }, 1, 1), null);
  assert.equal(activeRows({ ...effect, probsparse: null }, 1, 0), null);
  assert.equal(activeRows(null, 1, 0), null);
});

test('the large map outlines marked rows while they are tall, and ticks them at the left edge when thin', async () => {
  const { attentionHeatmapFigure } = await import('../../static/js/figures/heatmap.js');
  const { MARKED } = await import('../../static/js/figures/axes.js');
  const map = (n) => Array.from({ length: n }, () => Array.from({ length: n }, () => 1 / n));
  const marks = (n) => attentionHeatmapFigure({ tokens: Array.from({ length: n }, (_, i) => token(`t${i}`)), matrix: map(n),
    layer: 0, head: 0, marked: [1, 3], size: 700 }).layout.shapes.filter((s) => s.line.color === MARKED);
  assert.deepEqual(marks(8).map((s) => [s.type, s.y0 + 0.5]), [['rect', 1], ['rect', 3]]);
  const thin = marks(512); // about 1 px a row: an outline would cover the row's colours
  assert.deepEqual(thin.map((s) => [s.type, s.y0, s.x0, s.x1 < 512 / 10]), [['line', 1, -0.5, true], ['line', 3, -0.5, true]]);
});
