// The continuation's attribution heatmap (static/js/figures/continuation.js), on an answer shaped as POST
// /api/v1/attribution/continuation sends it: ragged rows padded with null, the columns' labels, the caption's numbers.
import './browser-globals.js';
import test from 'node:test';
import assert from 'node:assert/strict';

import { continuationColumns, continuationFigure, continuationMatrix, continuationSummary } from '../../static/js/figures/continuation.js';

const token = (text) => ({ text, display: text, start: 0, end: 1, special: false, segment: 0, unknown: false });
const next = (index, display) => ({ index, id: index, token: display, display });
const complete = (ok) => ({ sum: 1, difference: 1, relative_gap: ok ? 0 : 0.5, ok, reason: ok ? null : 'gap' });
const answer = {
  tokens: [token('The'), token(' cat')],
  continuation: [next(2, ' sat'), next(3, '<b>on'), next(4, ' the')],
  rows: [
    { token: next(2, ' sat'), scores: [0.5, -1.5], completeness: complete(true) },
    { token: next(3, '<b>on'), scores: [0.25, 0.5, -0.125], completeness: complete(true) },
    { token: next(4, ' the'), scores: [3, 0, 0, 0], completeness: complete(false) },
  ],
};

test('rows are padded with null after their own token; columns are the text and the continuation but its last', () => {
  assert.deepEqual(continuationMatrix(answer), [[0.5, -1.5, null, null], [0.25, 0.5, -0.125, null], [3, 0, 0, 0]]);
  assert.deepEqual(continuationColumns(answer), ['The', ' cat', ' sat', '<b>on']);
});

test('the caption counts the rows whose completeness holds and ranks only those', () => {
  const summary = continuationSummary(answer);
  assert.equal(summary.rows, 3);
  assert.equal(summary.ok, 2);
  assert.deepEqual(summary.strongest.map((s) => [s.token, s.on, s.value]), [[' sat', ' cat', -1.5], ['<b>on', ' cat', 0.5]]);
});

test('a diverging scale centred on 0 and labels escaped for Plotly', () => {
  const figure = continuationFigure(answer);
  const trace = figure.data[0];
  assert.equal(trace.zmid, 0);
  assert.equal(trace.zmax, 3);
  assert.equal(trace.zmin, -3);
  const labels = [...figure.layout.xaxis.ticktext, ...figure.layout.yaxis.ticktext, ...trace.text.flat()];
  assert.ok(labels.every((label) => !label.includes('<b>')));
});
