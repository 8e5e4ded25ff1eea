// The Informer lab's pure modules (static/js/figures/informer.js) and its /learn chapter's numbers
// (static/js/learn/views-informer.js): the verdict's claims, the sweep's crossover and the chapter's score counts
// recomputed here from the numbers they describe; the figures drawn from their inputs.
import './browser-globals.js';
import test from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';

import {
  crossoverWords, curvesFigure, layerFigure, layerSize, measuredCrossover, mse, seedsWords, verdict,
} from '../../static/js/figures/informer.js';
import { has, t } from '../../static/js/i18n/index.js';
import { activeCount, informerLayers, informerWords } from '../../static/js/learn/views-informer.js';

const done = (test_mse, naive_mse, seconds) => ({ steps: 10, seconds, test_mse, naive_mse, linear_mse: 0.5 });

test('the verdict says whether each network beat the seasonal-naive forecast, the share and which was first', () => {
  const parts = verdict({ probsparse: done(0.91, 3.5, 20.04), full: done(4.2, 3.5, 16.96) });
  assert.deepEqual(parts.map(([key]) => key), [
    'informer.verdict.beat.probsparse', 'informer.verdict.notBeat.full', 'informer.verdict.share',
    'informer.verdict.faster.full',
  ]);
  assert.deepEqual(parts[0][1], { test: '0.91', naive: '3.5' });
  assert.equal(parts[2][1].percent, (100 * 0.91 / 4.2).toFixed(1));
  assert.deepEqual(parts[3][1], { probsparse: '20.0', full: '17.0' });
  for (const [key, values] of parts) {
    assert.ok(has(key), key);
    assert.doesNotMatch(t(key, values), /\{\w+\}/, key);
  }
  const same = verdict({ probsparse: done(1, 2, 5), full: done(1, 2, 5) });
  assert.equal(same[3][0], 'informer.verdict.faster.same');
  assert.equal(same[2][1].percent, '100.0');
});

test('an MSE keeps four significant digits without grouping', () => {
  assert.equal(mse(0.123456), '0.1235');
  assert.equal(mse(12345.6), '12350');
  assert.equal(mse(3.5), '3.5');
  assert.equal(mse(1234.5, 'zh-CN'), '1235');
});

test('the crossover is the first length from which ProbSparse stays faster', () => {
  const sweep = (probsparse, full) => ({
    lengths: [96, 192, 384, 768], probsparse: { seconds: probsparse, peak_mb: [1, 1, 1, 1] },
    full: { seconds: full, peak_mb: [1, 2, 4, 8] },
  });
  assert.equal(measuredCrossover(sweep([2, 1, 1, 1], [1, 2, 2, 2])), 192);
  assert.equal(measuredCrossover(sweep([1, 3, 1, 1], [2, 2, 2, 2])), 384); // faster at 96, slower at 192
  assert.equal(measuredCrossover(sweep([2, 2, 2, 3], [1, 1, 1, 2])), null);
  const [key, values] = crossoverWords(sweep([2, 1, 0.001, 0.002], [1, 2, 0.004, 0.010]));
  assert.equal(key, 'informer.sweep.crossover');
  assert.deepEqual(values, { top: 768, probsparse: '2', full: '10', ratio: '5.0', length: 192 });
  assert.equal(crossoverWords(sweep([2, 2, 2, 3], [1, 1, 1, 2]))[0], 'informer.sweep.never');
});

test('the committed sweep file, when there is one, states its own crossover', () => {
  const path = new URL('../../static/data/informer-sweep.json', import.meta.url);
  if (!existsSync(path)) return;
  const sweep = JSON.parse(readFileSync(path, 'utf8'));
  assert.equal(sweep.full.seconds.length, sweep.lengths.length);
  assert.equal(sweep.probsparse.seconds.length, sweep.lengths.length);
  assert.equal(measuredCrossover(sweep), sweep.crossover);
});

test('the curves: one line per run, and the naive reference once known', () => {
  const runs = { probsparse: [{ step: 0, seconds: 0.1, val_mse: 9 }, { step: 5, seconds: 1, val_mse: 3 }], full: [{ step: 0, seconds: 0.2, val_mse: 8 }] };
  const byStep = curvesFigure({ x: 'step', runs, steps: 5, naive: null, unit: 'ppm²' });
  assert.equal(byStep.data.length, 2);
  assert.deepEqual(byStep.data[0].x, [0, 5]);
  assert.deepEqual(byStep.data[0].y, [9, 3]);
  assert.deepEqual(byStep.data[1].y, [8]);
  const bySeconds = curvesFigure({ x: 'seconds', runs, steps: 5, naive: 2.5, unit: 'ppm²' });
  assert.deepEqual(bySeconds.data[0].x, [0.1, 1]);
  assert.deepEqual(bySeconds.data[2].y, [2.5, 2.5]);
  assert.deepEqual(bySeconds.data[2].x, [0, 1]);
});

test('a layer map: the chosen head, its active rows marked, the size halving with the length', () => {
  const layer = { length: 3, weights: [[[1, 0, 0], [0.2, 0.3, 0.5], [1 / 3, 1 / 3, 1 / 3]], [[0, 1, 0], [0, 0, 1], [1, 0, 0]]], active: [[0, 1], [2, 0]] };
  const figure = layerFigure(layer, 0);
  assert.deepEqual(figure.data[0].z, layer.weights[0]);
  assert.deepEqual(figure.data[1].y, [0, 1]);
  assert.deepEqual(layerFigure({ ...layer, active: null }, 1).data[1].y, []);
  assert.equal(layerSize(48, 96, 400), 200);
  assert.equal(layerSize(12, 96, 400), 140);
});

test('the chapter counts the scores of each layer from u = min(c·⌈ln n⌉, n)', () => {
  assert.equal(activeCount(96), 25);
  assert.equal(activeCount(48), 20);
  assert.equal(activeCount(4096), 45);
  assert.equal(activeCount(3, 5), 3);
  assert.deepEqual(informerLayers(96), [
    { layer: 0, length: 96, u: 25, full: 9216, sparse: 4800 },
    { layer: 1, length: 48, u: 20, full: 2304, sparse: 1920 },
  ]);
  assert.deepEqual(informerLayers(1536).map((l) => l.length), [1536, 768]);
  const words = informerWords(96);
  assert.deepEqual(words, { window: '96', c: 5, u: 25, half: '48', u2: 20, full: '11,520', sparse: '6,720', percent: (100 * 6720 / 11520).toFixed(1) });
  assert.ok(Number(informerWords(4096).percent) < Number(words.percent)); // the share falls as L grows (try1)
  assert.doesNotMatch(t('learn.informer.caption', words), /\{\w+\}/);
});

test('the bench seeds line: the mean test MSE of each attention and of the naive forecast, and how often both won', () => {
  const run = (seed, probsparse, full, naive) => ({ seed, series: 'co2', probsparse: { test_mse: probsparse, seconds: 1 }, full: { test_mse: full, seconds: 1 }, naive_mse: naive, linear_mse: 1 });
  const [key, values] = seedsWords({ seeds: [run(0, 0.2, 0.4, 3), run(1, 0.4, 0.2, 3), run(2, 4, 0.3, 3)] });
  assert.equal(key, 'informer.sweep.seeds');
  assert.deepEqual(values, { seeds: '0, 1, 2', series: t('informer.series.co2'), probsparse: mse((0.2 + 0.4 + 4) / 3), full: mse(0.3), naive: '3', beat: 2, count: 3 });
  assert.doesNotMatch(t(key, values), /\{\w+\}/);
  assert.equal(seedsWords({ seeds: [] }), null);
});
