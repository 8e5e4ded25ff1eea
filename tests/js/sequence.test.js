// The /sequence page's numbers (static/js/figures/sequence.js) and the captions its views build: the path
// formulas against a breadth-first search over a convolution stack's connections, the measured crossing
// against the committed sweep file's own claim and its numbers, and every caption's values recomputed here
// from the data it describes.
import './browser-globals.js';
import test from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';

import {
  attentionPathFigure, attentionSteps, coneSpans, convLayers, convPath, convPathFigure, measuredCrossing, pathSummary,
  reachFigure, reachSummary, receptiveField, receptiveFieldFigure, rnnPathFigure, rnnSteps, sweepMemoryFigure, sweepRows,
  sweepTimeFigure,
} from '../../static/js/figures/sequence.js';
import { has, t } from '../../static/js/i18n/index.js';
import { sequenceWords } from '../../static/js/learn/views-sequence.js';
import { pathWords } from '../../static/js/views/sequence/paths.js';
import { reachWords } from '../../static/js/views/sequence/reach.js';
import { sweepWords } from '../../static/js/views/sequence/sweep.js';

const SWEEP = JSON.parse(readFileSync(new URL('../../static/data/sequence-sweep.json', import.meta.url), 'utf8'));

/** For input j, the fewest layers after which each later position is reachable in a causal stack whose layer l
 * reads positions t − m·dilation (m = 0..k − 1): a BFS level by level. */
function bfsLayers(length, kernel, dilated, j, maxLayers) {
  const first = new Map([[j, 0]]);
  let frontier = new Set([j]);
  for (let layer = 0; layer < maxLayers; layer += 1) {
    const dilation = dilated ? 2 ** layer : 1;
    const next = new Set();
    for (let out = 0; out < length; out += 1) {
      for (let m = 0; m < kernel; m += 1) if (frontier.has(out - m * dilation)) next.add(out);
    }
    frontier = next;
    for (const p of frontier) if (!first.has(p)) first.set(p, layer + 1);
  }
  return first;
}

test('the convolution formulas are the fewest layers of a real stack, by BFS', () => {
  for (const kernel of [2, 3, 5]) {
    for (const dilated of [false, true]) {
      for (let j = 0; j < 40; j += 3) {
        const first = bfsLayers(40, kernel, dilated, j, dilated ? 7 : 40);
        for (let i = j; i < 40; i += 1) assert.equal(convLayers(i, j, kernel, dilated), first.get(i), `${kernel} ${dilated} ${j} ${i}`);
      }
    }
  }
  assert.equal(convLayers(100, 0, 3, false), 50);
  assert.deepEqual([1, 2, 3, 4].map((l) => receptiveField(3, l, true)), [3, 7, 15, 31]);
  assert.equal(rnnSteps(9, 2), 7);
  assert.equal(attentionSteps(9, 2), 1);
  assert.equal(attentionSteps(4, 4), 0);
});

test('convPath is a path of the stack from the earlier position to the later one', () => {
  for (const kernel of [2, 3, 7]) {
    for (const dilated of [false, true]) {
      for (let i = 0; i < 60; i += 7) {
        for (let j = 0; j <= i; j += 1) {
          const path = convPath(i, j, kernel, dilated);
          assert.equal(path[0], j);
          assert.equal(path[path.length - 1], i);
          assert.equal(path.length, convLayers(i, j, kernel, dilated) + 1);
          path.slice(1).forEach((p, layer) => {
            const step = p - path[layer];
            const dilation = dilated ? 2 ** layer : 1;
            assert.ok(step % dilation === 0 && step >= 0 && step / dilation <= kernel - 1);
          });
        }
      }
    }
  }
  assert.deepEqual(convPath(2, 9, 3, false), convPath(9, 2, 3, false)); // either order
});

test('the path figures draw the summary: the RNN chain, the stack up to its layers, one arc', () => {
  const state = { n: 64, i: 40, j: 10, k: 3, dilated: false };
  const s = pathSummary(state);
  assert.deepEqual([s.low, s.high, s.distance, s.rnn, s.conv, s.attention, s.field], [10, 40, 30, 30, 15, 1, 31]);
  assert.deepEqual(s.sequential, { rnn: 64, conv: 15, attention: 1 });
  const rnn = rnnPathFigure(state).data.find((d) => d.name === 'path');
  assert.equal(rnn.x.length - 1, s.rnn); // |i − j| steps between |i − j| + 1 states
  const conv = convPathFigure(state).data.find((d) => d.name === 'path');
  assert.deepEqual(conv.y, Array.from({ length: s.conv + 1 }, (_, l) => l));
  assert.deepEqual(conv.x, convPath(40, 10, 3, false));
  const spans = coneSpans(40, s.conv, 3, false);
  assert.deepEqual(spans[0], [10, 40]); // the input span of a 15-layer stack of kernel 3: 31 positions
  assert.deepEqual(spans[s.conv], [40, 40]);
  const ends = convPathFigure({ ...state, i: 10, j: 40 }).data.find((d) => d.name === 'ends');
  assert.deepEqual([ends.x, ends.y, ends.text], [[40, 10], [s.conv, 0], ['j', 'i']]); // the later one on top
  const arc = attentionPathFigure(state).data.find((d) => d.name === 'path');
  assert.equal(arc.x[0], 10);
  assert.equal(arc.x[arc.x.length - 1], 40);
});

test('the section\'s sentences are the summary\'s numbers', () => {
  const state = { n: 128, i: 5, j: 100, k: 3, dilated: true };
  const words = pathWords(state);
  const [rnn, conv, attention] = words.counts;
  assert.deepEqual(rnn, ['sequence.count.rnn', { steps: 95, n: 128 }]);
  // dilated k = 3: receptive fields 3, 7, 15, 31, 63, 127: 96 positions need 6 layers
  assert.deepEqual(conv, ['sequence.count.convDilated', { layers: 6, k: 3, field: 127 }]);
  assert.deepEqual(attention, ['sequence.count.attention', { steps: 1 }]);
  assert.deepEqual(words.captions.conv, ['sequence.path.conv', { low: 5, high: 100, layers: 6, field: 127 }]);
  assert.deepEqual(pathWords({ ...state, j: 5 }).captions.rnn, ['sequence.path.same', {}]);
  assert.deepEqual(pathWords({ ...state, dilated: false }).counts[1][0], 'sequence.count.conv');
});

test('the measured crossing is the file\'s own claim and follows from its numbers', () => {
  for (const [index, phase] of ['forward', 'train'].entries()) {
    const claim = SWEEP.measured_crossings[index];
    const found = measuredCrossing(SWEEP, phase);
    assert.equal(claim.phase, phase);
    assert.deepEqual(found.between, claim.between);
    if (claim.n === null) assert.equal(found.n, null);
    else assert.ok(Math.abs(found.n - claim.n) < 1e-6 * claim.n);
    if (found.between) {
      const rows = sweepRows(SWEEP, phase);
      const [r0, r1] = found.between.map((n) => rows.find((r) => r.n === n));
      assert.ok(r0.attention.seconds < r0.rnn.seconds && r1.attention.seconds >= r1.rnn.seconds);
      assert.ok(found.n > r0.n && found.n <= r1.n);
    }
  }
  const made = {
    results: [
      { kind: 'rnn', phase: 'forward', n: 100, seconds: 4 }, { kind: 'attention', phase: 'forward', n: 100, seconds: 1 },
      { kind: 'rnn', phase: 'forward', n: 400, seconds: 2 }, { kind: 'attention', phase: 'forward', n: 400, seconds: 8 },
    ],
  };
  const found = measuredCrossing(made, 'forward');
  assert.deepEqual(found.between, [100, 400]);
  assert.ok(Math.abs(found.n - 200) < 1e-9); // log ratios −log 4 and +log 4: halfway in log N
  assert.equal(measuredCrossing({ results: made.results.slice(0, 2) }, 'forward').always, 'attention_faster');
});

test('the sweep\'s captions are recomputed from the file', () => {
  const words = sweepWords(SWEEP);
  for (const phase of ['forward', 'train']) {
    const crossing = measuredCrossing(SWEEP, phase);
    const parts = words[phase];
    if (crossing.n !== null) {
      const [key, values] = parts[0];
      assert.equal(key, `sequence.sweep.${crossing.n >= 4 * SWEEP.d ? 'cross' : 'crossNear'}.${phase}`);
      assert.equal(values.n0, String(crossing.between[0]).replace(/\B(?=(\d{3})+(?!\d))/g, ','));
      assert.equal(values.n, Math.round(crossing.n).toLocaleString('en'));
      assert.equal(values.d, SWEEP.d);
    }
    const top = sweepRows(SWEEP, phase).filter((r) => ['rnn', 'conv', 'attention'].every((k) => r[k] && r[k].seconds)).pop();
    const [key, values] = parts[parts.length - 1];
    assert.equal(key, 'sequence.sweep.top');
    assert.equal(values.n, top.n.toLocaleString('en'));
    assert.equal(values.ratio, String(Number((top.attention.seconds / top.rnn.seconds).toPrecision(2))));
  }
  const [memoryKey, memory] = words.memory[0];
  assert.equal(memoryKey, 'sequence.sweep.memoryCaption');
  const top = sweepRows(SWEEP, 'forward').filter((r) => ['rnn', 'conv', 'attention'].every((k) => r[k] && r[k].seconds)).pop();
  assert.equal(memory.n, top.n.toLocaleString('en'));
  // "attention holds N × N matrices": its memory is the largest of the three at that N
  assert.ok(top.attention.peak_rss_bytes > top.rnn.peak_rss_bytes && top.attention.peak_rss_bytes > top.conv.peak_rss_bytes);
  const skipped = SWEEP.results.filter((r) => r.skipped);
  assert.equal(words.notes.some(([k]) => k === 'sequence.sweep.skipped'), skipped.length > 0);
  for (const [k] of [...words.forward, ...words.train, ...words.memory, ...words.notes]) assert.ok(has(k), k);
});

test('"far beyond N = d" is said only of a crossing at 4 d or more', () => {
  const made = (attention400) => ({
    d: 64,
    results: [
      { kind: 'rnn', phase: 'forward', n: 100, seconds: 4, peak_rss_bytes: 1 }, { kind: 'attention', phase: 'forward', n: 100, seconds: 1, peak_rss_bytes: 2 },
      { kind: 'conv', phase: 'forward', n: 100, seconds: 1, peak_rss_bytes: 1 },
      { kind: 'rnn', phase: 'forward', n: 400, seconds: 2, peak_rss_bytes: 1 }, { kind: 'attention', phase: 'forward', n: 400, seconds: attention400, peak_rss_bytes: 2 },
      { kind: 'conv', phase: 'forward', n: 400, seconds: 1, peak_rss_bytes: 1 },
    ],
  });
  // log ratios −log 4 at N = 100 and +log 4 at 400: N = 200 < 4 · 64
  assert.equal(sweepWords(made(8)).forward[0][0], 'sequence.sweep.crossNear.forward');
  // the same times at four times the lengths: N = 800 ≥ 4 · 64
  const late = made(8);
  late.results = late.results.map((r) => ({ ...r, n: r.n * 4 }));
  assert.equal(sweepWords(late).forward[0][0], 'sequence.sweep.cross.forward');
});

test('the sweep figures: log axes, every measured case a point, each curve named with its formula', () => {
  for (const phase of ['forward', 'train']) {
    const figure = sweepTimeFigure(SWEEP, phase);
    assert.equal(figure.layout.xaxis.type, 'log');
    assert.equal(figure.layout.yaxis.type, 'log');
    for (const [index, kind] of ['rnn', 'conv', 'attention'].entries()) {
      const ran = SWEEP.results.filter((r) => r.kind === kind && r.phase === phase && typeof r.seconds === 'number');
      assert.deepEqual(figure.data[index].x, ran.map((r) => r.n).sort((a, b) => a - b));
      assert.ok(figure.data[index].name.includes(SWEEP.formulas[kind].time));
    }
    const crossing = measuredCrossing(SWEEP, phase);
    assert.equal(figure.layout.shapes.length, crossing.n === null ? 0 : 1);
  }
  const memory = sweepMemoryFigure(SWEEP, 'forward');
  assert.ok(memory.data[2].name.includes('O(N²)'));
});

const ANSWER = {
  length: 6, d: 2, kernel: 2, dilated: false, layers: 2, seed: 0,
  rnn: [1e-4, 1e-3, 1e-2, 0.1, 0.5, 1.2], conv: [0, 0, 0, 0.2, 0.3, 0.9], attention: [0.05, 0.07, 0.04, 0.06, 0.05, 0.3],
  receptive_field: [2, 3],
};

test('the reach caption is the answer\'s numbers', () => {
  const s = reachSummary(ANSWER);
  assert.equal(s.rnnRatio, 0.5 / 1e-4);
  const words = reachWords(ANSWER);
  assert.deepEqual(words[0], ['sequence.reach.fades', { ratio: '5000', near: 4, farPos: 0 }]);
  assert.deepEqual(words[1], ['sequence.reach.attention', { min: '0.04', max: '0.3' }]);
  assert.deepEqual(words[2], ['sequence.reach.zeros', { zeros: 3, field: 3 }]); // positions 0..2 beyond the last 3
  const steep = reachWords({ ...ANSWER, rnn: [1e-13, 1e-3, 1e-2, 0.1, 0.73, 1.2] });
  assert.deepEqual(steep[0], ['sequence.reach.fades', { ratio: '7.3 × 10¹²', near: 4, farPos: 0 }]);
  // float32 underflow: the GRU's first norms read 0; the ratio is taken from the farthest that does not
  const under = reachWords({ ...ANSWER, rnn: [0, 0, 1e-6, 0.1, 0.5, 1.2] });
  assert.deepEqual(under[0], ['sequence.reach.fades', { ratio: '5 × 10⁵', near: 4, farPos: 2 }]);
  assert.deepEqual(under[1], ['sequence.reach.underflow', { farPos: 2 }]);
  assert.ok(!JSON.stringify(under).includes('NaN') && !JSON.stringify(under).includes('Infinity'));
  const flat = reachWords({ ...ANSWER, rnn: [2, 1, 1, 1, 1, 1], conv: [0.1, 0.1, 0.1, 0.2, 0.3, 0.9], receptive_field: [4, 7] });
  assert.equal(flat[0][0], 'sequence.reach.notFades');
  assert.deepEqual(flat[2], ['sequence.reach.covers', { field: 7, n: 6 }]);
  for (const [key] of [...words, ...flat]) assert.ok(has(key), key);
  const figure = reachFigure(ANSWER);
  assert.equal(figure.layout.yaxis.type, 'log');
  assert.deepEqual(figure.data[1].x, [3, 4, 5]); // the zeros left out of the log axis
  assert.deepEqual(receptiveFieldFigure(ANSWER).data[0].y, [2, 3]);
});

test('the chapter\'s caption: RNN steps, undilated and dilated layers, one attention step', () => {
  assert.deepEqual(sequenceWords(15), { i: 63, j: 48, distance: 15, rnn: 15, conv: 8, dilated: 4, attention: 1 });
  assert.deepEqual(sequenceWords(63), { i: 63, j: 0, distance: 63, rnn: 63, conv: 32, dilated: 6, attention: 1 });
  assert.ok(t('learn.sequence.caption', sequenceWords(3)).includes('2 layers'));
});
