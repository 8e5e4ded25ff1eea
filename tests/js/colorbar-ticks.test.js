// The colour bar's ticks (static/js/figures/axes.js colorbarTicks): inside the bar's range, evenly spaced
// by a round step, at most eight, and no two written alike, for the ranges the maps have.
import './browser-globals.js';
import test from 'node:test';
import assert from 'node:assert/strict';

import { colorbarTicks, mapColorbar } from '../../static/js/figures/axes.js';

const RANGES = [
  [0, 1], [0, 1.98], [-0.03, 0.03], [-0.0123, 0.0123], [-1e-5, 1e-5], [0, 0.004], [0, 37.5], [-2.5, 2.5],
  [0, 0.51], [-0.9999, 0.9999], [0, 1e-7],
];

test('ticks lie in the range, evenly spaced by 1, 2 or 5 × 10^k, between two and eight of them', () => {
  for (const [low, high] of RANGES) {
    const { tickvals } = colorbarTicks(low, high);
    assert.ok(tickvals.length >= 2 && tickvals.length <= 8, `${low}..${high}: ${tickvals}`);
    const step = tickvals[1] - tickvals[0];
    const mantissa = step / 10 ** Math.floor(Math.log10(step) + 1e-9);
    assert.ok([1, 2, 5].some((m) => Math.abs(mantissa - m) < 1e-6), `${low}..${high}: step ${step}`);
    for (let i = 0; i < tickvals.length; i += 1) {
      assert.ok(tickvals[i] >= low - step * 1e-6 && tickvals[i] <= high + step * 1e-6, `${low}..${high}: ${tickvals[i]}`);
      if (i) assert.ok(Math.abs(tickvals[i] - tickvals[i - 1] - step) < step * 1e-6);
    }
  }
});

test('no two ticks read the same, and each reads as its value', () => {
  for (const [low, high] of RANGES) {
    const { tickvals, ticktext } = colorbarTicks(low, high);
    assert.equal(new Set(ticktext).size, ticktext.length, `${low}..${high}: ${ticktext}`);
    const step = tickvals[1] - tickvals[0];
    ticktext.forEach((text, i) => assert.ok(Math.abs(Number(text) - tickvals[i]) < step / 100, `${text} vs ${tickvals[i]}`));
    assert.ok(!ticktext.includes('-0') && !ticktext.some((text) => /^-0\.?0*$/.test(text)), ticktext.join());
  }
});

test('the difference map the issue saw: ±0.03 reads −0.03 … 0.03 in steps of 0.01, once each', () => {
  assert.deepEqual(colorbarTicks(-0.03, 0.03).ticktext, ['-0.03', '-0.02', '-0.01', '0.00', '0.01', '0.02', '0.03']);
  assert.deepEqual(colorbarTicks(0, 1).ticktext, ['0.0', '0.2', '0.4', '0.6', '0.8', '1.0']);
});

test('the bar uses its own ticks (array mode), and a flat range still has one', () => {
  const bar = mapColorbar(0, 1);
  assert.equal(bar.tickmode, 'array');
  assert.deepEqual(bar.tickvals, colorbarTicks(0, 1).tickvals);
  assert.equal(colorbarTicks(0.5, 0.5).tickvals.length, 1);
});
