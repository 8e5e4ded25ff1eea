// The patching grid's figure, caption and starting corrupted text (static/js/figures/patch.js), on answers shaped as
// POST /api/v1/patch sends them, with known best cells.
import './browser-globals.js';
import test from 'node:test';
import assert from 'node:assert/strict';

import {
  bestCell, columnLabels, headColumns, patchCaptionParts, patchFigure, patchView, rawNoteParts, suggestCorrupted,
} from '../../static/js/figures/patch.js';

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

// a grouped-query model: 4 query heads, 2 key-value heads; 2 layers, 3 positions (the clean tokens' first three)
const tokens3 = clean.slice(0, 3);
const corrupted3 = corrupted.slice(0, 3);
const byPosition = {
  target: 'head_position', metric_name: 'logit_difference', rows: 'layer', columns: 'head', n_heads: 4, n_kv_heads: 2,
  axes: ['layer', 'head', 'position'], metric: { clean: 2, corrupted: -1 }, normalised: true, gap: 3, min_gap: 0.2,
  grid: [[[0, 0.5, 0.1], [0.2, 0, 0], [0, 0, 0], [0.9, 0.3, 0]], [[0, 0, 0.4], [0, -0.5, 0], [0.1, 0.1, 0.1], [0, 0, 0]]],
  clean_tokens: tokens3, corrupted_tokens: corrupted3,
};
byPosition.patched = byPosition.grid.map((row) => row.map((cells) => cells.map((v) => -1 + 3 * v)));

test('heads are grouped by key-value head: an empty column and a line between groups, a label above each', () => {
  assert.deepEqual(headColumns(4, 2).columns, [{ head: 0 }, { head: 1 }, { gap: true }, { head: 2 }, { head: 3 }]);
  assert.deepEqual(headColumns(4, 2).groups, [{ kv: 0, start: 0, count: 2 }, { kv: 1, start: 3, count: 2 }]);
  assert.deepEqual(headColumns(3, 3).groups, []); // multi-head attention: no groups
  const pattern = { ...byPosition, target: 'pattern', axes: ['layer', 'head'], grid: [[0.1, 0.2, 0.3, 0.4]],
    patched: [[0, 0, 0, 0]] };
  const figure = patchFigure(pattern, { layer: 0, head: 2 });
  assert.deepEqual(figure.data[0].z, [[0.1, 0.2, null, 0.3, 0.4]]);
  assert.deepEqual(figure.data[0].customdata[0], [[0, 0], [0, 1], null, [0, 2], [0, 3]]);
  assert.deepEqual(figure.layout.annotations.map((a) => [a.text, a.x]), [['KV 0', 0.5], ['KV 1', 3.5]]);
  const [outline, line] = figure.layout.shapes;
  assert.deepEqual([outline.x0, outline.x1], [2.5, 3.5]); // head 2 sits in column 3, after the gap
  assert.deepEqual([line.type, line.x0, line.x1], ['line', 2, 2]);
  assert.deepEqual(figure.layout.xaxis.ticktext, ['H0', 'H1', 'H2', 'H3']);
  const caption = patchCaptionParts(pattern);
  assert.equal(caption.key, 'patch.caption.pattern');
  assert.deepEqual([caption.values.layer, caption.values.head, caption.values.value], [0, 3, '0.40']);
});

test('a head and position grid shows each cell at its best position, or every head at one position', () => {
  const best = patchView(byPosition);
  assert.deepEqual(best.values, [[0.5, 0.2, 0, 0.9], [0.4, 0, 0.1, 0]]);
  assert.deepEqual(best.positions, [[1, 0, 0, 0], [2, 0, 0, 0]]);
  assert.deepEqual(patchView(byPosition, 1).values, [[0.5, 0, 0, 0.3], [0, -0.5, 0.1, 0]]);
  assert.deepEqual(columnLabels(byPosition), ['H0', 'H1', 'H2', 'H3']);
  const caption = patchCaptionParts(byPosition);
  assert.equal(caption.key, 'patch.caption.head_position');
  assert.deepEqual([caption.values.layer, caption.values.head, caption.values.position, caption.values.value],
    [0, 3, 0, '0.90']);
  const at2 = patchCaptionParts(byPosition, 2);
  assert.deepEqual([at2.values.layer, at2.values.head, at2.values.position, at2.values.token], [1, 0, 2, 'cat→dog']);
  const figure = patchFigure(byPosition, { position: 2 });
  assert.deepEqual(figure.data[0].z, [[0.1, 0, null, 0, 0], [0.4, 0, null, 0.1, 0]]);
  assert.ok(patchFigure(byPosition).data[0].text[0][0].includes('best at position 1'));
});

test('a tiny gap: the raw metric, centred on the corrupted one, a note with the gap, a caption in the metric', () => {
  const raw = { ...byPosition, target: 'mlp', columns: 'position', axes: ['layer', 'position'], normalised: false,
    grid: null, gap: 0.01, min_gap: 0.25, metric: { clean: 1.01, corrupted: 1 },
    patched: [[1, 1.004, 0.99], [1.002, 1, 1.008]] };
  const figure = patchFigure(raw);
  assert.deepEqual(figure.data[0].z, raw.patched);
  assert.equal(figure.data[0].zmid, 1);
  assert.ok(Math.abs(figure.data[0].zmax - 1.01) < 1e-9 && Math.abs(figure.data[0].zmin - 0.99) < 1e-9);
  const caption = patchCaptionParts(raw);
  assert.equal(caption.key, 'patch.caption.mlpRaw');
  assert.deepEqual([caption.values.layer, caption.values.position, caption.values.value], [1, 2, '1.0080']);
  const note = rawNoteParts(raw);
  assert.equal(note.key, 'patch.rawNote');
  assert.deepEqual([note.values.gap, note.values.minGap], ['0.0100', '0.2500']);
  assert.equal(rawNoteParts(heads), null);
  // the gap the other way: the cell moving furthest toward the (lower) clean metric is the lowest
  const down = { ...raw, metric: { clean: 0.99, corrupted: 1 }, gap: -0.01 };
  assert.deepEqual(patchCaptionParts(down).values.value, '0.9900');
});
