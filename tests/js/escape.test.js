// Text from a user or a tokenizer on its way into Plotly (static/js/figures/escape.js, and tickLabel of
// figures/axes.js): Plotly reads a pseudo-HTML subset, so <, >, & and quotes must arrive as entities and
// show as the characters themselves.
import './browser-globals.js';
import test from 'node:test';
import assert from 'node:assert/strict';

import { escapeForPlotly } from '../../static/js/figures/escape.js';
import { tickLabel } from '../../static/js/figures/axes.js';

test('escapeForPlotly turns <, >, & and quotes into entities Plotly decodes', () => {
  assert.equal(escapeForPlotly('<b>a & b</b>'), '&lt;b&gt;a &amp; b&lt;/b&gt;');
  assert.equal(escapeForPlotly(`"x" 'y'`), '&#34;x&#34; &#39;y&#39;');
  assert.equal(escapeForPlotly('<a href="javascript:alert(1)">x</a>'), '&lt;a href=&#34;javascript:alert(1)&#34;&gt;x&lt;/a&gt;');
});

test('an entity already in the text is shown as typed, not decoded', () => {
  assert.equal(escapeForPlotly('&lt;br&gt;'), '&amp;lt;br&amp;gt;');
});

test('other text passes unchanged, and non-strings are written as text', () => {
  assert.equal(escapeForPlotly('Hello 我们 ⋯ ↵'), 'Hello 我们 ⋯ ↵');
  assert.equal(escapeForPlotly(''), '');
  assert.equal(escapeForPlotly(42), '42');
  assert.equal(escapeForPlotly(null), 'null');
});

test('tickLabel cuts a long label to 14 characters before escaping it, so no entity is cut in half', () => {
  assert.equal(tickLabel('<'.repeat(20)), '&lt;'.repeat(13) + '…');
  assert.equal(tickLabel('a&b'), 'a&amp;b');
  assert.equal(tickLabel('我'.repeat(14)), '我'.repeat(14));
  assert.equal(tickLabel('😀'.repeat(15)), '😀'.repeat(13) + '…'); // characters, not UTF-16 units
});
