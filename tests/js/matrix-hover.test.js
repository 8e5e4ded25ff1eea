// The hover text of a step's matrix (static/js/figures/matrix.js): "row · column: value" for every cell, token
// text escaped for Plotly's pseudo-HTML, a hidden entry said in words. Checked against the strings written out
// here cell by cell.
import './browser-globals.js';
import test from 'node:test';
import assert from 'node:assert/strict';

import { matrixFigure } from '../../static/js/figures/matrix.js';
import { t } from '../../static/js/i18n/index.js';

test('every cell says its row, its column and its value; token text is escaped; hidden cells say so', () => {
  const z = [[1.23456, null, -0.5], [0, 12, -0.00004]];
  const figure = matrixFigure({
    z, rowLabels: ['<b>x</b>', 'a&b'], rowName: 'query', rowOffset: 7,
    colLabels: ['"k"', "it's", '>'], colName: 'key', colOffset: 40,
  });
  const want = [
    ['query 7 “&lt;b&gt;x&lt;/b&gt;” · key 40 “&#34;k&#34;”: 1.2346',
      `query 7 “&lt;b&gt;x&lt;/b&gt;” · key 41 “it&#39;s”: ${t('walk.word.hidden')}`,
      'query 7 “&lt;b&gt;x&lt;/b&gt;” · key 42 “&gt;”: −0.5000'],
    ['query 8 “a&amp;b” · key 40 “&#34;k&#34;”: 0',
      'query 8 “a&amp;b” · key 41 “it&#39;s”: 12',
      'query 8 “a&amp;b” · key 42 “&gt;”: 0.0000'], // never "−0.0000"
  ];
  assert.deepEqual(figure.data[0].customdata, want);
  assert.equal(figure.data[0].hovertemplate, '%{customdata}<extra></extra>');
});

test('rows without labels are numbered; columns without labels are dimensions', () => {
  const figure = matrixFigure({ z: [[0.5, 2]], rowName: 'token', rowOffset: 3, colOffset: 160 });
  assert.deepEqual(figure.data[0].customdata, [['token 3 · dim 160: 0.5000', 'token 3 · dim 161: 2']]);
});
