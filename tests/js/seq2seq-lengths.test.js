// The encoder-decoder page's bottleneck sentence (static/js/seq2seq/lengths.js): the six longest lengths of an
// evaluation's accuracy by length, each counted once, whatever order the keys come in.
import test from 'node:test';
import assert from 'node:assert/strict';

import { LONGEST, lengthsOf, longestMean } from '../../static/js/seq2seq/lengths.js';

test('the mean over the six longest lengths, each counted once', () => {
  const byLength = { 30: 0.2, 4: 1, 25: 0.5, 26: 0.4, 9: 1, 27: 0.6, 28: 0.1, 29: 0.3, 24: 0.9 };
  assert.equal(LONGEST, 6);
  assert.deepEqual(lengthsOf(byLength), [4, 9, 24, 25, 26, 27, 28, 29, 30]); // as numbers: 9 before 24
  const { from, to, mean } = longestMean(byLength);
  assert.deepEqual([from, to], [25, 30]);
  assert.ok(Math.abs(mean - (0.5 + 0.4 + 0.6 + 0.1 + 0.3 + 0.2) / 6) < 1e-15);
});

test('fewer lengths than six: all of them; none: null', () => {
  assert.deepEqual(longestMean({ 10: 0.5, 12: 1 }), { from: 10, to: 12, mean: 0.75 });
  assert.equal(longestMean({}), null);
});

test('the alignment before any evaluation is an empty frame: no axes whose titles would overlap', async () => {
  await import('./browser-globals.js');
  const { alignmentFigure } = await import('../../static/js/figures/seq2seq.js');
  const empty = alignmentFigure({ source: [], target: [], weights: [] });
  assert.deepEqual(empty.data, []);
  assert.equal(empty.layout.xaxis.visible, false);
  assert.equal(empty.layout.yaxis.visible, false);
  const drawn = alignmentFigure({ source: ['a', 'b'], target: ['b'], weights: [[0.25, 0.75]] });
  assert.deepEqual(drawn.data[0].z, [[0.25, 0.75]]);
  assert.notEqual(drawn.layout.xaxis.visible, false);
});
