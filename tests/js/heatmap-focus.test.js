// The explorer's large map (static/js/figures/heatmap.js): a focused token's row and column are outlined,
// never tinted, so the cells one wants to read keep their colours; the query row keeps its solid outline.
import './browser-globals.js';
import test from 'node:test';
import assert from 'node:assert/strict';

import { attentionHeatmapFigure } from '../../static/js/figures/heatmap.js';

const tokens = ['[CLS]', 'the', 'cat', 'sat', '[SEP]'].map((text) => ({ text, display: text, special: text.startsWith('[') }));
const matrix = tokens.map((_, i) => tokens.map((__, j) => (i === j ? 0.6 : 0.1)));

test('the focus is two dotted outlines with no fill, the query one solid outline', () => {
  const figure = attentionHeatmapFigure({ tokens, matrix, layer: 0, head: 0, query: 1, focus: 3 });
  const rects = figure.layout.shapes.filter((shape) => shape.type === 'rect');
  assert.equal(rects.length, 3);
  for (const rect of rects) assert.equal(rect.fillcolor, 'rgba(0,0,0,0)');
  const [queryRow, focusRow, focusColumn] = rects;
  assert.deepEqual([queryRow.y0, queryRow.y1, queryRow.line.dash], [0.5, 1.5, 'solid']);
  assert.deepEqual([focusRow.y0, focusRow.y1, focusRow.line.dash], [2.5, 3.5, 'dot']);
  assert.deepEqual([focusColumn.x0, focusColumn.x1, focusColumn.line.dash], [2.5, 3.5, 'dot']);
  assert.deepEqual(figure.data[0].z, matrix); // the numbers drawn are the map's, focus or not
});
