// The /corpus page's pure parts (static/js/figures/corpus.js, static/js/views/corpus-state.js) on answers written
// out here by hand: each caption's numbers are the first and last drawn values, the tokens' marks are the pairs'
// ends, the arcs start and end on their tokens, the scatter holds every head once, and the URL round-trips.
import './browser-globals.js';
import test from 'node:test';
import assert from 'node:assert/strict';

import {
  arcPath, arcStroke, formatValue, headName, headsCaption, headsFigure, snippetTokens, textsCaption,
} from '../../static/js/figures/corpus.js';
import { explorerLink, readState, settle, writeState } from '../../static/js/views/corpus-state.js';

const results = [{ value: 0.9137 }, { value: 0.7 }, { value: 0.6449 }];

test('a caption states the head, the count, the metric and the first and last values drawn', () => {
  assert.equal(textsCaption({ layer: 3, head: 7, by: 'to_previous', results }),
    "L3 H7's 3 texts with the highest to_previous: 0.91 to 0.64.");
  assert.equal(textsCaption({ layer: 3, head: 7, by: 'entropy', lowest: true, results: results.slice(0, 1) }),
    "L3 H7's one text with the lowest entropy: 0.91.");
  assert.equal(textsCaption({ layer: 0, head: 1, by: 'induction', results: [] }),
    "The index holds no text where L0 H1's induction is defined.");
  assert.equal(textsCaption({ layer: 5, head: 3, query: '^she$', key: '^[a-z]+$', results }),
    "L5 H3's 3 texts where a strongest pair goes from a token matching “^she$” to one matching “^[a-z]+$”, "
    + "by that pair's weight: 0.91 to 0.64.");
  // the control: another answer's values are not this one's
  assert.notEqual(textsCaption({ layer: 3, head: 7, by: 'to_previous', results: results.slice(1) }),
    textsCaption({ layer: 3, head: 7, by: 'to_previous', results }));
});

test('values are shown with two decimals (half away from zero, as toFixed), a dash where undefined', () => {
  assert.equal(formatValue(0.125), '0.13');
  assert.equal(formatValue(2), '2.00');
  assert.equal(formatValue(null), '—');
  assert.equal(formatValue(Number.NaN), '—');
  assert.equal(headName(4, 11), 'L4 H11');
});

test('tokens are marked where the pairs start and end; word pieces join the token before', () => {
  const marked = snippetTokens(['[CLS]', 'she', 'play', '##ed', '[SEP]'], [{ query: 1, key: 2 }, { query: 3, key: 3 }]);
  assert.deepEqual(marked.map((m) => m.text), ['[CLS]', 'she', 'play', 'ed', '[SEP]']);
  assert.deepEqual(marked.map((m) => m.continued), [false, false, false, true, false]);
  assert.deepEqual(marked.map((m) => m.query), [false, true, false, true, false]);
  assert.deepEqual(marked.map((m) => m.key), [false, false, true, true, false]);
  assert.equal(snippetTokens(['##', 'x'], [])[0].continued, false); // the token "##" itself, first: not a piece
});

test('an arc starts on its query token, ends on its key token and rises above both', () => {
  const numbers = (d) => d.match(/-?\d+(\.\d+)?/g).map(Number);
  const [x0, y0, , c1y, , c2y, x1, y1] = numbers(arcPath({ x: 10, y: 40 }, { x: 130, y: 40 }));
  assert.deepEqual([x0, y0, x1, y1], [10, 40, 130, 40]);
  assert.equal(c1y, 40 - 20); // lift 10 + 120 / 12
  assert.equal(c2y, 40 - 20);
  const far = numbers(arcPath({ x: 0, y: 80 }, { x: 900, y: 30 }));
  assert.equal(far[3], 30 - 26); // at most maxLift above the higher token
  const loop = numbers(arcPath({ x: 50, y: 20 }, { x: 50, y: 20 }));
  assert.ok(loop[0] < 50 && loop.at(-2) > 50 && loop[3] < 20); // a token to itself: a loop above it
  assert.ok(arcStroke(0.9).width > arcStroke(0.1).width && arcStroke(0.9).opacity > arcStroke(0.1).opacity);
  assert.deepEqual(arcStroke(7), arcStroke(1));
});

const answer = {
  x: 'entropy', y: 'to_previous',
  points: [
    { layer: 0, head: 0, x: 1.5, y: 0.1 }, { layer: 0, head: 1, x: 0.2, y: 0.9 },
    { layer: 1, head: 0, x: 2.0, y: 0.05 }, { layer: 1, head: 1, x: 1.1, y: 0.3 },
  ],
};

test('the scatter draws every head once, by layer, and rings the chosen head', () => {
  const figure = headsFigure(answer, { layer: 1, head: 1 });
  const layers = figure.data.filter((trace) => trace.showlegend !== false);
  assert.equal(layers.length, 2);
  assert.deepEqual(layers.flatMap((trace) => trace.customdata), answer.points.map((p) => [p.layer, p.head]));
  assert.deepEqual(layers.flatMap((trace) => trace.x), answer.points.map((p) => p.x));
  assert.deepEqual(layers.flatMap((trace) => trace.y), answer.points.map((p) => p.y));
  const ring = figure.data.at(-1);
  assert.deepEqual([ring.x, ring.y, ring.customdata], [[1.1], [0.3], [[1, 1]]]);
  assert.equal(figure.layout.xaxis.title.text, 'entropy');
  assert.equal(headsFigure({ ...answer, x: '<b>' }, { layer: 9, head: 9 }).layout.xaxis.title.text, '&lt;b&gt;');
  assert.equal(headsFigure(answer, { layer: 9, head: 9 }).data.length, 2); // a head not drawn: no ring
  assert.equal(headsCaption(answer, { layer: 1, head: 1 }, { model: 'minilm', texts: 60 }),
    '4 heads of minilm, each at its mean entropy (x) and mean to_previous (y) over 60 texts; L1 H1, ringed, is at '
    + '1.10 and 0.30.');
});

test('the URL round-trips, and settles on what the corpus has', () => {
  const state = readState(new URLSearchParams('layer=3&head=7&by=entropy&lowest=1&k=5&x=to_first&y=entropy'));
  assert.deepEqual(state, { layer: 3, head: 7, by: 'entropy', lowest: true, k: 5, query: null, key: null,
    x: 'to_first', y: 'entropy' });
  assert.deepEqual(readState(writeState(state)), state);
  const pattern = readState(new URLSearchParams('query=%5Eshe%24&key=.&k=500'));
  assert.deepEqual([pattern.query, pattern.key, pattern.k, pattern.by], ['^she$', '.', 100, null]);
  assert.equal(readState(new URLSearchParams('query=she')).query, null); // one pattern alone: the metric query
  const info = { n_layers: 6, n_heads: 12, metrics: ['entropy', 'to_previous', 'to_first'] };
  const settled = settle(readState(new URLSearchParams('layer=6&head=11&by=nope&x=nope')), info);
  assert.deepEqual([settled.layer, settled.head, settled.by, settled.x, settled.y], [0, 11, 'to_previous', 'entropy', 'to_previous']);
  assert.equal(settle(state, { ...info, metrics: ['distance'] }).by, 'distance');
});

test('the explorer link carries the text, the model, the layer and the head as the explorer reads them', () => {
  const text = 'a & b <img src=x> ?=#';
  const link = explorerLink({ text, model: 'minilm', layer: 3, head: 7 });
  assert.ok(link.startsWith('/?'));
  const params = new URLSearchParams(link.slice(2));
  assert.deepEqual([params.get('text'), params.get('model'), params.get('layer'), params.get('head')],
    [text, 'minilm', '3', '7']);
  assert.equal(new URLSearchParams(explorerLink({ text, layer: 0, head: 0 }).slice(2)).has('model'), false);
  assert.equal(new URLSearchParams(explorerLink({ text, layer: 0, head: 0, lang: 'zh' }).slice(2)).get('lang'), 'zh');
});
