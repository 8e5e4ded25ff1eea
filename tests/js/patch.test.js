// The patching grid's figure, caption and starting corrupted text (static/js/figures/patch.js), on answers shaped as
// POST /api/v1/patch sends them, with known best cells.
import './browser-globals.js';
import test from 'node:test';
import assert from 'node:assert/strict';

import { bestCell, columnLabels, patchCaptionParts, patchFigure, suggestCorrupted } from '../../static/js/figures/patch.js';

const token = (text) => ({ text, display: text, start: 0, end: 1, special: false, segment: 0, unknown: false });
const special = (text) => ({ text, display: text, start: null, end: null, special: true, segment: 0, unknown: false });
const clean = [special('[CLS]'), token('the'), token('cat'), token('<b>sat'), special('[SEP]')];
const corrupted = [special('[CLS]'), token('the'), token('dog'), token('<b>sat'), special('[SEP]')];

const heads = {
  target: 'heads', metric_name: 'cosine_similarity', rows: 'layer', columns: 'head', metric: { clean: 1, corrupted: 0.6 },
  grid: [[0.1, -0.3, 0.2], [0.05, 0.7, 0.7]], clean_tokens: clean, corrupted_tokens: corrupted,
};
const residual = {
  ...heads, target: 'residual', columns: 'position',
  grid: [[0, 0, 1, 0, 0], [0.1, 0, 0.4, 0.2, 0]],
};

test('the best cell is the largest value, the first of equal ones', () => {
  assert.deepEqual(bestCell(heads.grid), { layer: 1, index: 1, value: 0.7 });
  assert.deepEqual(bestCell(residual.grid), { layer: 0, index: 2, value: 1 });
  assert.equal(bestCell([]), null);
});

test('the caption names the best cell and its value', () => {
  const h = patchCaptionParts(heads);
  assert.equal(h.key, 'patch.caption.heads');
  assert.deepEqual([h.values.layer, h.values.head, h.values.value], [1, 1, '0.70']);
  const r = patchCaptionParts(residual);
  assert.equal(r.key, 'patch.caption.residual');
  assert.deepEqual([r.values.layer, r.values.position, r.values.value, r.values.token], [0, 2, '1.00', 'cat→dog']);
  assert.deepEqual(r.data, ['token']);
});

test('the figure draws the grid as it came, layers down, on a scale centred on 0, tokens escaped', () => {
  const figure = patchFigure(heads, { layer: 0, head: 2 });
  const trace = figure.data[0];
  assert.deepEqual(trace.z, heads.grid);
  assert.equal(trace.zmin, -1);
  assert.equal(trace.zmax, 1);
  assert.equal(figure.layout.yaxis.autorange, 'reversed');
  assert.deepEqual(trace.customdata[1][2], [1, 2]);
  const [outline] = figure.layout.shapes;
  assert.deepEqual([outline.x0, outline.x1, outline.y0, outline.y1], [1.5, 2.5, -0.5, 0.5]);
  assert.deepEqual(columnLabels(heads), ['H0', 'H1', 'H2']);
  const positions = patchFigure(residual);
  assert.equal(positions.layout.shapes.length, 0);
  assert.ok(positions.layout.xaxis.ticktext.includes('&lt;b&gt;sat'));
  assert.ok(positions.data[0].text.flat().every((text) => !text.includes('<b>')));
});

test('a grid beyond 1 widens the scale symmetrically', () => {
  const trace = patchFigure({ ...heads, grid: [[1.5, -0.2]] }).data[0];
  assert.deepEqual([trace.zmin, trace.zmax], [-1.5, 1.5]);
});

test('the suggested corrupted text spells the second word as the last different one, punctuation kept', () => {
  assert.equal(suggestCorrupted('The cat sat on the mat.'), 'The mat sat on the mat.');
  assert.equal(suggestCorrupted('Paris is the capital of France'), 'Paris France the capital of France');
  assert.equal(suggestCorrupted('The cat, it sat.'), 'The sat, it sat.');
  assert.equal(suggestCorrupted('Hello'), 'Hello');
  assert.equal(suggestCorrupted('a b b'), 'a b b'); // no word differs from the second
});
