// The explorer's large map's axes (static/js/figures/heatmap.js axisTicks): which tokens are labelled, and
// that a thinned or zoomed axis names each label's position with its token ("37 animal").
import './browser-globals.js';
import test from 'node:test';
import assert from 'node:assert/strict';

import { escapeForPlotly } from '../../static/js/figures/escape.js';
import { attentionHeatmapFigure, axisTicks } from '../../static/js/figures/heatmap.js';

const words = ['the', 'animal', 'didn', "'", 't', 'cross', 'street', 'because', 'it', 'was', 'too', 'tired', '.'];
const labels = (n) => Array.from({ length: n }, (_, i) => (i === 0 ? '[CLS]' : i === n - 1 ? '[SEP]' : words[(i - 1) % words.length]));

test('a short input is labelled token by token, without positions', () => {
  const all = labels(13);
  const { tickvals, ticktext } = axisTicks(all, 0, 12, 420);
  assert.deepEqual(tickvals, [...Array(13).keys()]);
  assert.deepEqual(ticktext, all);
});

test('512 tokens on 620 px: every 11th token, each label its position and token', () => {
  const all = labels(512);
  // 620 px hold 47 labels of 13 px: a step of ceil(512 / 47) = 11
  const { tickvals, ticktext } = axisTicks(all, 0, 511, 620);
  assert.equal(tickvals.length, 47);
  assert.deepEqual(tickvals.slice(0, 4), [0, 11, 22, 33]);
  assert.equal(tickvals.at(-1), 506);
  assert.deepEqual(ticktext.slice(0, 4), ['0 [CLS]', `11 ${all[11]}`, `22 ${all[22]}`, `33 ${all[33]}`]);
  assert.equal(ticktext[1], '11 too');
  tickvals.forEach((i, j) => assert.equal(ticktext[j], `${i} ${all[i]}`));
});

test('the query and the focused token are always labelled, with their positions', () => {
  const all = labels(512);
  const { tickvals, ticktext } = axisTicks(all, 0, 511, 620, [37, 300]);
  assert.ok(tickvals.includes(37) && tickvals.includes(300));
  assert.equal(ticktext[tickvals.indexOf(37)], `37 ${all[37]}`);
  // no other label within a step (11) of a kept one
  for (const i of tickvals) if (i !== 37 && i !== 300) assert.ok(Math.abs(i - 37) >= 11 && Math.abs(i - 300) >= 11, `${i}`);
});

test('zoomed in on 40 tokens of 512: every token in view is named, with its position', () => {
  const all = labels(512);
  const { tickvals, ticktext } = axisTicks(all, 199.5, 239.5, 620);
  assert.deepEqual(tickvals, Array.from({ length: 40 }, (_, i) => 200 + i));
  assert.deepEqual(ticktext, tickvals.map((i) => `${i} ${all[i]}`));
  // a reversed or out-of-bounds range is read the same way; a range with no token in it has no tick
  assert.deepEqual(axisTicks(all, 505.2, 530, 620).tickvals, [506, 507, 508, 509, 510, 511]);
  assert.deepEqual(axisTicks(all, 3.2, 3.8, 620), { tickvals: [], ticktext: [] });
});

test('the figure of 512 tokens carries the position-and-token labels on both axes', () => {
  const n = 512;
  const tokens = labels(n).map((text) => ({ text, display: text, special: text.startsWith('[') }));
  const matrix = tokens.map((_, i) => tokens.map((__, j) => (i === j ? 1 : 0)));
  const figure = attentionHeatmapFigure({ tokens, matrix, layer: 0, head: 0, query: 37, size: 760 });
  const { xaxis, yaxis } = figure.layout;
  assert.deepEqual(xaxis.tickvals, yaxis.tickvals);
  assert.deepEqual(xaxis.ticktext, yaxis.ticktext);
  assert.ok(xaxis.tickvals.length < n);
  assert.ok(xaxis.ticktext.includes(`37 ${tokens[37].text}`));
  // labels reach Plotly escaped ("'" as &#39;), the position before them
  xaxis.tickvals.forEach((i, j) => assert.equal(xaxis.ticktext[j], `${i} ${escapeForPlotly(tokens[i].text)}`));
  assert.ok(xaxis.ticktext.some((text) => text.endsWith(' &#39;')));
});
