// The attribution panel's numbers (static/js/figures/attribution.js): bars scaled per column, the sign of an
// attribution, the completeness caption's numbers and the shown rank correlations. The answer is shaped as
// POST /api/v1/attribution sends it (MiniLM tokens).
import './browser-globals.js';
import test from 'node:test';
import assert from 'node:assert/strict';

import {
  attributionRows, COMPARED, completenessNumbers, shown, shownRho, strongest, unreliable, MAX_STEPS,
} from '../../static/js/figures/attribution.js';

const token = (text, special = false) => ({ text, display: text, start: null, end: null, special, segment: 0 });
const ANSWER = {
  tokens: [token('[CLS]', true), token('cat'), token('sat'), token('[SEP]', true)],
  scores: [0.1, -0.4, 0.2, 0],
  compared: { attention: [0.5, 0.25, 0.125, 0.125], rollout: [0.4, 0.3, 0.2, 0.1], contributions: [2, 4, 1, 0] },
};

test('each column is scaled to its own largest absolute value; the score keeps its sign', () => {
  const rows = attributionRows(ANSWER);
  assert.deepEqual(rows.map((r) => r.label), ['[CLS]', 'cat', 'sat', '[SEP]']);
  assert.deepEqual(rows.map((r) => r.widths.score), [0.25, 1, 0.5, 0]);
  assert.deepEqual(rows.map((r) => r.sign), [1, -1, 1, 0]);
  assert.deepEqual(rows.map((r) => r.widths.attention), [1, 0.5, 0.25, 0.25]);
  assert.deepEqual(rows.map((r) => r.widths.contributions), [0.5, 1, 0.25, 0]);
  for (const name of COMPARED) assert.deepEqual(rows.map((r) => r[name]), ANSWER.compared[name]);
});

test('a column of zeros draws no bar instead of dividing by zero', () => {
  const rows = attributionRows({ ...ANSWER, scores: [0, 0, 0, 0] });
  assert.deepEqual(rows.map((r) => r.widths.score), [0, 0, 0, 0]);
});

test('the completeness caption: sum, difference and their distance in percent of the difference', () => {
  assert.deepEqual(completenessNumbers({ sum: 0.412, difference: 0.415 }),
    { sum: '0.412', difference: '0.415', apart: '0.72', within: true });
  assert.equal(completenessNumbers({ sum: 1.02, difference: 1 }).within, false);
  assert.equal(completenessNumbers({ sum: 0.4455997, difference: 0.4455998 }).apart, '0.000');
  assert.equal(completenessNumbers(null), null);
});

test('numbers are shown with 3 significant digits and a real minus sign; undefined ρ is null', () => {
  assert.equal(shown(-0.41234), '\u22120.412');
  assert.equal(shown(12.345), '12.3');
  assert.equal(shown(0.00001234), '1.23e-5');
  assert.equal(shown(null), '—');
  assert.equal(shownRho(-0.2912), '\u22120.29');
  assert.equal(shownRho(null), null);
  assert.equal(strongest(ANSWER.scores), 1);
});

test('an answer whose completeness fails names the message: more steps, another baseline, or a tiny difference', () => {
  assert.equal(unreliable({ completeness: null, steps: null }), null);
  assert.equal(unreliable({ completeness: { sum: 1, difference: 1, ok: true, reason: null }, steps: 128 }), null);
  const gap = unreliable({ completeness: { sum: 2.5, difference: 1, ok: false, reason: 'gap' }, steps: 64 });
  assert.equal(gap.key, 'attribution.unreliable.gap');
  assert.deepEqual([gap.values.sum, gap.values.difference, gap.values.apart, gap.values.steps], ['2.50', '1.00', '150.00', 64]);
  const most = unreliable({ completeness: { sum: 2.5, difference: 1, ok: false, reason: 'gap' }, steps: MAX_STEPS });
  assert.equal(most.key, 'attribution.unreliable.gapAtMost');
  const tiny = unreliable({ completeness: { sum: 1e-7, difference: 2e-7, ok: false, reason: 'difference_too_small' }, steps: 128 });
  assert.deepEqual(tiny, { key: 'attribution.unreliable.tiny', values: { difference: '2.00e-7' } });
});
