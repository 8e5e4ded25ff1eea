// Direct logit attribution's figure and sentences (static/js/figures/dla.js), on answers shaped as POST
// /api/v1/logit-attribution sends them: parts that add up to a known sum, a known largest part, grouped-query heads.
import './browser-globals.js';
import test from 'node:test';
import assert from 'node:assert/strict';

import { dlaCaptionParts, dlaFigure, dlaParts, dlaSummary, formatLogit, headColumns } from '../../static/js/figures/dla.js';

const token = (text) => ({ text, display: text, start: 0, end: 1, special: false, segment: 0, unknown: false });

// GPT-2-like: attention biases and a final LayerNorm bias; 2 layers x 4 heads
const gpt2 = {
  model: 'tiny-gpt2', tokens: [token('The'), token(' cat'), token('<b>sat')], position: 2,
  answer: [{ id: 5, token: 'Ġon', display: ' on' }, { id: 9, token: 'Ġin', display: '<i>in' }],
  heads: [[0.5, -0.25, 0, 0.125], [1.5, -2, 0.25, 0]], mlp: [0.75, -0.5], attention_bias: [0.125, 0],
  embeddings: 0.25, norm_bias: -0.125, total: 0.625, logit: 0.625, capped: 0.625, softcap: null, norm: 'layer', scale: 2.5,
};
// Llama-like: no biases, RMSNorm, 4 query heads sharing 2 key-value heads, a soft-cap
const llama = {
  ...gpt2, attention_bias: null, norm_bias: null, norm: 'rms', softcap: 30, capped: 0.49,
  answer: [{ id: 5, token: '▁on', display: ' on' }],
};

test('every part is listed once, and the sum and the largest parts are of what is drawn', () => {
  assert.equal(dlaParts(gpt2).length, 1 + 8 + 2 + 2 + 1);
  assert.equal(dlaParts(llama).length, 1 + 8 + 2);
  const s = dlaSummary(gpt2);
  assert.equal(s.sum, 0.25 + 0.5 - 0.25 + 0.125 + 1.5 - 2 + 0.25 + 0.75 - 0.5 + 0.125 - 0.125);
  assert.deepEqual(s.top.map((p) => [p.kind, p.layer, p.head, p.value]),
    [['head', 1, 1, -2], ['head', 1, 0, 1.5], ['mlp', 0, undefined, 0.75]]);
});

test('numbers keep their sign; a rounded zero is not negative', () => {
  assert.equal(formatLogit(1.23456), '+1.235');
  assert.equal(formatLogit(-0.5), '−0.500');
  assert.equal(formatLogit(-0.0001), '+0.000');
});

test('heads are grouped by key-value head with an empty column between groups', () => {
  assert.deepEqual(headColumns(4, 2), { x: [0, 1, 3, 4], width: 5, groups: [{ kv: 0, x0: 0, x1: 1 }, { kv: 1, x0: 3, x1: 4 }] });
  assert.deepEqual(headColumns(4, 4), { x: [0, 1, 2, 3], width: 4, groups: [] });
  assert.deepEqual(headColumns(4, null).groups, []);
  const figure = dlaFigure(llama, { nKvHeads: 2, layer: 1, head: 2 });
  assert.deepEqual(figure.data[0].z, [[0.5, -0.25, null, 0, 0.125], [1.5, -2, null, 0.25, 0]]);
  assert.deepEqual(figure.data[0].customdata[1], [[1, 0], [1, 1], null, [1, 2], [1, 3]]);
  assert.equal(figure.layout.annotations.length, 2);
  assert.equal(figure.layout.shapes[0].x0, 2.5); // head 2 sits in column 3
});

test('one diverging scale centred on 0 for the heads and the strip', () => {
  const figure = dlaFigure(gpt2);
  const axis = figure.layout.coloraxis;
  assert.equal(axis.cmid, 0);
  assert.equal(axis.cmax, 2);
  assert.equal(axis.cmin, -2);
  assert.ok(figure.data.every((trace) => trace.coloraxis === 'coloraxis'));
  // the strip: row −1 embeddings and the final norm's bias, then each layer's MLP and attention bias
  assert.deepEqual(figure.data[1].y, [-1, 0, 1]);
  assert.deepEqual(figure.data[1].z, [[0.25, -0.125], [0.75, 0.125], [-0.5, 0]]);
  assert.deepEqual(dlaFigure(llama).data[1].z, [[0.25], [0.75], [-0.5]]);
});

test('the sentences name the answer as data and state the sum, the logit and the largest parts', () => {
  const lines = dlaCaptionParts(gpt2);
  assert.deepEqual(lines.map((l) => l.key), ['dla.explained.two', 'dla.sum', 'dla.top']);
  assert.deepEqual(lines[0].values, { good: ' on', bad: '<i>in', position: 2, token: '<b>sat' });
  assert.deepEqual(lines[0].data, ['good', 'bad', 'token']);
  assert.equal(lines[1].values.sum, '+0.625');
  assert.equal(lines[1].values.logit, '+0.625');
  assert.equal(lines[1].values.count, 14);
  assert.equal(lines[2].values.parts, 'L1 H1 −2.000, L1 H0 +1.500, MLP 0 +0.750');
  const capped = dlaCaptionParts(llama);
  assert.deepEqual(capped.map((l) => l.key), ['dla.explained.one', 'dla.sum', 'dla.top', 'dla.capped']);
  assert.equal(capped[3].values.capped, '+0.490');
});

test('token text in hover labels is escaped for Plotly', () => {
  const figure = dlaFigure(gpt2);
  const texts = [...figure.data[0].text.flat(), ...figure.data[1].text.flat()];
  assert.ok(texts.every((text) => !text.includes('<b>') && !text.includes('<i>')));
});
