// The glimpse lab's pure modules (static/js/figures/glimpse.js) and its /learn chapter's numbers
// (static/js/learn/views-glimpse.js): each sentence's claim recomputed here from the numbers it describes, the
// charts and the canvas drawn from their inputs.
import './browser-globals.js';
import test from 'node:test';
import assert from 'node:assert/strict';

import {
  agreement, canvasFigure, decadeStep, emitted, percent, RUNS, seriesFigure, varianceText, verdict,
} from '../../static/js/figures/glimpse.js';
import { has, t } from '../../static/js/i18n/index.js';
import { glimpseWeights, glimpseWords, NOISE, SCORES, TAUS } from '../../static/js/learn/views-glimpse.js';

const oneHot = (i) => Array.from({ length: 9 }, (_, j) => (j === i ? 1 : 0));
const watched = (rows, output = [1, 2]) => ({ canvas: 0, pixels: Array.from({ length: 24 }, () => Array(24).fill(0)), target: [1, 2], regions: rows, output });
const evalOf = (step, grad_variance, tau, glimpses) => ({ step, steps: 10, seconds: step, accuracy: 0.5, digit_accuracy: 0.6, eval_loss: 1, loss: 1, entropy: 1, grad_variance, tau, glimpses });
const done = (test_accuracy, digit_accuracy, seconds) => ({ steps: 10, seconds, test_accuracy, digit_accuracy });

function example() {
  const soft = [[0.1, 0.5, 0.05, 0.05, 0.05, 0.05, 0.05, 0.05, 0.1], [0.6, 0.1, 0.05, 0.05, 0.05, 0.05, 0.05, 0.0, 0.05], [0.2, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1]];
  const evals = {
    soft: [evalOf(0, 1e-15, null, []), evalOf(10, 2e-15, null, [watched(soft)])],
    reinforce: [evalOf(0, 3e-4, null, []), evalOf(10, 4e-4, null, [watched([oneHot(1), oneHot(3), oneHot(0)])])],
    gumbel: [evalOf(0, 1e-6, 2, []), evalOf(10, 5e-7, 0.5, [watched([oneHot(1), oneHot(0)], [1])])],
    straight_through: [evalOf(0, 1e-6, 2, []), evalOf(10, 2e-6, 0.5, [watched([oneHot(2), oneHot(0), oneHot(0), oneHot(0), oneHot(0)], [1, 2, 3, 4, 5])])],
    nobaseline: [evalOf(0, 1e-3, null, []), evalOf(10, 1.2e-3, null, [watched([oneHot(1), oneHot(0), oneHot(0)])])],
  };
  const finished = { soft: done(0.92, 0.97, 30.04), reinforce: done(0.41, 0.7, 41), gumbel: done(0.85, 0.93, 35), straight_through: done(0.8, 0.9, 36), nobaseline: done(0.3, 0.6, 40) };
  return { evals, finished };
}

test('the verdict names the best run and recomputes each ratio, the temperature and where the glimpses agree', () => {
  const { evals, finished } = example();
  const parts = verdict(finished, evals);
  const byKey = Object.fromEntries(parts);
  assert.deepEqual(parts.map(([key]) => key), [
    'glimpse.verdict.best', 'glimpse.verdict.variance.gumbel', 'glimpse.verdict.variance.straight_through',
    'glimpse.verdict.baseline.helped', 'glimpse.verdict.tau.gumbel', 'glimpse.verdict.tau.straight_through',
    'glimpse.verdict.agree.reinforce', 'glimpse.verdict.agree.gumbel', 'glimpse.verdict.agree.straight_through',
  ]);
  assert.equal(byKey['glimpse.verdict.best'].runs, t('glimpse.run.soft'));
  assert.equal(byKey['glimpse.verdict.best'].percent, '92.0');
  assert.equal(byKey['glimpse.verdict.variance.gumbel'].ratio, String(Number((4e-4 / 5e-7).toPrecision(3))));
  assert.equal(byKey['glimpse.verdict.variance.straight_through'].ratio, '200');
  assert.equal(byKey['glimpse.verdict.variance.gumbel'].step, 10);
  assert.equal(byKey['glimpse.verdict.baseline.helped'].ratio, '3');
  assert.deepEqual([byKey['glimpse.verdict.baseline.helped'].without, byKey['glimpse.verdict.baseline.helped'].with], ['30.0', '41.0']);
  assert.deepEqual(byKey['glimpse.verdict.tau.gumbel'], { start: '2', end: '0.5' });
  // soft's largest weights by step: cells 1, 0, 0; each hard run compared over the steps both took
  assert.deepEqual(byKey['glimpse.verdict.agree.reinforce'], { same: 2, total: 3 }); // 1 = 1, 3 ≠ 0, 0 = 0
  assert.deepEqual(byKey['glimpse.verdict.agree.gumbel'], { same: 2, total: 2 }); // two steps only
  assert.deepEqual(byKey['glimpse.verdict.agree.straight_through'], { same: 2, total: 3 }); // 2 ≠ 1, 0 = 0, 0 = 0
  for (const [key, values] of parts) {
    assert.ok(has(key), key);
    assert.doesNotMatch(t(key, values), /\{\w+\}/, key);
  }
});

test('ties, a baseline that did not lower the variance, and runs not finished are said as they are', () => {
  const { evals, finished } = example();
  const tied = { ...finished, gumbel: done(0.92, 0.99, 35) };
  const parts = Object.fromEntries(verdict(tied, evals));
  assert.equal(parts['glimpse.verdict.bestTied'].runs, `${t('glimpse.run.soft')}${t('glimpse.verdict.and')}${t('glimpse.run.gumbel')}`);
  assert.equal(parts['glimpse.verdict.bestTied'].digits, '99.0');
  const quieter = { ...evals, nobaseline: [evalOf(10, 1e-4, null, [])] };
  const said = Object.fromEntries(verdict(finished, quieter));
  assert.equal(said['glimpse.verdict.baseline.didNotHelp'].ratio, '0.25');
  const { soft, gumbel } = finished;
  const some = verdict({ soft, gumbel }, evals).map(([key]) => key);
  assert.deepEqual(some, ['glimpse.verdict.best', 'glimpse.verdict.tau.gumbel', 'glimpse.verdict.agree.gumbel']);
  assert.deepEqual(verdict({}, evals), []);
});

test('agreement counts the steps where soft attention\'s largest weight is the hard glimpse', () => {
  const soft = { glimpses: [watched([oneHot(4), oneHot(5)]), watched([oneHot(0)])] };
  const hard = { glimpses: [watched([oneHot(4), oneHot(6), oneHot(1)]), watched([oneHot(0), oneHot(0)])] };
  assert.deepEqual(agreement(soft, hard), { same: 2, total: 3 });
});

test('the charts: shares as percentages, the variance on a log axis without soft attention or zeros', () => {
  const { evals } = example();
  const accuracy = seriesFigure({ metric: 'accuracy', x: 'step', runs: evals, steps: 10 });
  assert.equal(accuracy.data.length, RUNS.length);
  assert.deepEqual(accuracy.data[0].y, [50, 50]);
  assert.deepEqual(accuracy.layout.xaxis.range, [0, 10]);
  const variance = seriesFigure({ metric: 'variance', x: 'seconds', runs: { ...evals, gumbel: [evalOf(0, 0, 2, []), evalOf(5, 1e-6, 1, [])] }, steps: 10 });
  assert.deepEqual(variance.data.map((trace) => trace.name), ['reinforce', 'gumbel', 'straight_through', 'nobaseline'].map((run) => t(`glimpse.run.${run}`)));
  assert.deepEqual(variance.data[1].y, [1e-6]);
  assert.equal(variance.layout.yaxis.type, 'log');
  assert.equal(variance.layout.yaxis.dtick, 1); // 1e-6 to 1.2e-3: four decades, a tick each
  assert.equal(decadeStep([1e-12, 3e-2]), 2); // eleven decades: every second one
  assert.equal(decadeStep([0, -1]), 1);
  const loss = seriesFigure({ metric: 'loss', x: 'seconds', runs: { soft: evals.soft }, steps: 10 });
  assert.deepEqual(loss.data.map((trace) => trace.name), [t('glimpse.run.soft')]);
});

test('a canvas: soft weights written in their cells, a hard glimpse outlined on its cell', () => {
  const rows = [[0.01, 0.02, 0.03, 0.04, 0.4, 0.1, 0.2, 0.1, 0.1]];
  const soft = canvasFigure(watched(rows), 0, { hard: false });
  assert.deepEqual(soft.layout.annotations.map((a) => a.text), rows[0].map((w) => w.toFixed(2)));
  const cells = soft.layout.shapes.filter((shape) => shape.type === 'rect');
  assert.equal(cells.length, 9);
  assert.deepEqual([cells[4].x0, cells[4].y0], [7.5, 7.5]); // the middle cell: pixels 8..15 each way
  const hard = canvasFigure(watched([oneHot(0), oneHot(7)]), 1, { hard: true });
  const outlined = hard.layout.shapes.filter((shape) => shape.type === 'rect');
  assert.equal(outlined.length, 1);
  assert.deepEqual([outlined[0].name, outlined[0].x0, outlined[0].y0], ['cell-7', 7.5, 15.5]); // row 3, column 2
  assert.equal(hard.data[0].z.length, 24);
  assert.equal(emitted(watched([oneHot(0), oneHot(7), oneHot(1)], [4, 2]), 2), 10); // after the digits: END
  assert.equal(emitted(watched([oneHot(0)], [4, 2]), 1), 2);
});

test('numbers in words', () => {
  assert.equal(percent(0.9234), '92.3');
  assert.equal(varianceText(0), '0');
  assert.equal(varianceText(0.012345), '0.0123');
  assert.equal(varianceText(5.4821e-7), '5.48e-7');
});

test('the chapter: the Gumbel-max pick, the softmax and the relaxed sample recomputed from the scores and the noise', () => {
  const total = SCORES.reduce((sum, s) => sum + Math.exp(s), 0);
  const p = SCORES.map((s) => Math.exp(s) / total);
  const noisy = SCORES.map((s, i) => s + NOISE[i]); // log p + g up to a constant
  const pick = noisy.indexOf(Math.max(...noisy));
  const likeliest = p.indexOf(Math.max(...p));
  assert.notEqual(pick, likeliest, 'the caption says the pick is not the likeliest cell');
  for (const tau of TAUS) {
    const weights = glimpseWeights(tau);
    weights.p.forEach((x, i) => assert.ok(Math.abs(x - p[i]) < 1e-12));
    const e = noisy.map((x) => Math.exp(x / tau));
    const sum = e.reduce((a, b) => a + b, 0);
    weights.relaxed.forEach((x, i) => assert.ok(Math.abs(x - e[i] / sum) < 1e-9, `τ ${tau}`));
    const words = glimpseWords(tau);
    assert.equal(words.cell, pick + 1);
    assert.equal(words.likeliest, likeliest + 1);
    assert.equal(Number(words.relaxed), Number((e[pick] / sum).toFixed(2)));
    assert.equal(Number(words.p), Number(p[pick].toFixed(2)));
    assert.doesNotMatch(t('learn.glimpse.caption', words), /\{\w+\}/);
  }
  // the smaller τ, the closer to the one-hot pick
  const shares = TAUS.map((tau) => glimpseWeights(tau).relaxed[pick]);
  assert.deepEqual([...shares].sort((a, b) => b - a), shares);
});
