// Data -> Plotly figures and sentences for the glimpse lab (/glimpse): each run's numbers against the step or the
// seconds (sequence accuracy, validation loss, the attention's entropy, the variance of its gradient estimate on a
// log scale), a watched canvas with one decoding step's weights over its 3 × 3 cells drawn on it, and what the
// finished runs' numbers say. Pure: no DOM, no fetch (words through t()).
import { t } from '../i18n/index.js';
import { FONT, HIGHLIGHT, TEXT_COLOUR } from './axes.js';

const LAYOUT = Object.freeze({
  font: { family: FONT, size: 12, color: TEXT_COLOUR },
  paper_bgcolor: '#ffffff',
  plot_bgcolor: '#ffffff',
  hoverlabel: { font: { family: FONT, size: 12 } },
});
const GRID_COLOUR = '#eef0f3';
export const GRID = 3; // cells per side of a canvas (model/lab/glimpse_data.py)
export const CELL = 8; // pixels per cell side
export const SIDE = GRID * CELL;
export const MAX_PIXEL = 16;
export const END = 10; // the token after the digits 0..9
export const METHODS = Object.freeze(['soft', 'reinforce', 'gumbel', 'straight_through']);
// The runs the page trains: the four methods, and REINFORCE without its baseline when asked for.
export const RUNS = Object.freeze([...METHODS, 'nobaseline']);
export const METHOD_OF = Object.freeze({ soft: 'soft', reinforce: 'reinforce', gumbel: 'gumbel', straight_through: 'straight_through', nobaseline: 'reinforce' });
export const HARD = Object.freeze(['reinforce', 'gumbel', 'straight_through', 'nobaseline']);
// The runs' colours and dashes, also in static/css/glimpse.css (the page's legend and list of runs).
export const COLOURS = Object.freeze({ soft: '#2457c5', reinforce: HIGHLIGHT, gumbel: '#2f9e44', straight_through: '#9c36b5', nobaseline: '#868e96' });
export const DASH = { soft: 'solid', reinforce: 'solid', gumbel: 'dash', straight_through: 'dot', nobaseline: 'dashdot' };
// What each chart plots: the event field and whether its axis is a share (drawn as %) or a log scale.
const METRICS = Object.freeze({
  accuracy: { field: 'accuracy', percent: true },
  loss: { field: 'eval_loss' },
  entropy: { field: 'entropy' },
  variance: { field: 'grad_variance', log: true },
});

/** A share as a percentage with one decimal. */
export const percent = (x) => (100 * x).toFixed(1);

/** Seconds with one decimal. */
export const secondsText = (x) => x.toFixed(1);

/** A number with three significant digits, no grouping (the same in every language). */
export const significant = (x, locale = 'en') => new Intl.NumberFormat(locale, { maximumSignificantDigits: 3, useGrouping: false }).format(x);

/** A variance in words: three significant digits in scientific notation when it is small or large. */
export function varianceText(x) {
  if (x === 0) return '0';
  return Math.abs(x) >= 1e-3 && Math.abs(x) < 1e4 ? String(Number(x.toPrecision(3))) : x.toExponential(2);
}

/** Ticks on a log axis every 1, 2, 3… powers of 10: at most about 6 labels over the values' decades. */
export function decadeStep(values) {
  const positive = values.filter((v) => v > 0);
  if (!positive.length) return 1;
  const decades = Math.ceil(Math.log10(Math.max(...positive))) - Math.floor(Math.log10(Math.min(...positive)));
  return Math.max(1, Math.ceil(decades / 6));
}

/**
 * One metric of every run against the step or the seconds. The variance chart leaves soft attention out (it
 * samples nothing: its variance is 0, which a log axis cannot show) and any value that is not above 0.
 * @param {{metric: 'accuracy'|'loss'|'entropy'|'variance', x: 'step'|'seconds', runs: Object<string, object[]>,
 *   steps: number, height?: number}} options runs: each run's eval events so far, by run name
 */
export function seriesFigure({ metric, x, runs, steps, height = 260 }) {
  const { field, percent: share = false, log = false } = METRICS[metric];
  const data = [];
  for (const run of RUNS) {
    const evals = runs[run];
    if (!evals || (log && run === 'soft')) continue;
    const points = evals.filter((e) => e[field] !== null && (!log || e[field] > 0));
    data.push({
      type: 'scatter', mode: 'lines+markers', name: t(`glimpse.run.${run}`),
      x: points.map((e) => e[x]), y: points.map((e) => (share ? 100 * e[field] : e[field])),
      line: { color: COLOURS[run], width: 2, dash: DASH[run] }, marker: { size: 4 },
      hovertemplate: `${t(`glimpse.axis.${x}`)} %{x}: %{y:${share ? '.1f' : '.3g'}}<extra>%{fullData.name}</extra>`,
    });
  }
  const right = x === 'step' ? Math.max(1, steps) : Math.max(1e-9, ...RUNS.flatMap((run) => (runs[run] ?? []).map((e) => e.seconds)));
  return {
    data,
    layout: {
      ...LAYOUT,
      height,
      title: { text: t(`glimpse.chart.${metric}.${x}`), x: 0.01, xanchor: 'left', font: { size: 13 } },
      margin: { t: 34, r: 12, b: 44, l: 56 },
      showlegend: false, // one legend in the page for every chart (the runs' colours and dashes)
      xaxis: { title: { text: t(`glimpse.axis.${x}`), standoff: 4 }, range: [0, right], zeroline: false, gridcolor: GRID_COLOUR },
      yaxis: {
        title: { text: t(`glimpse.axis.${metric}`), standoff: 4 }, gridcolor: GRID_COLOUR, zeroline: false,
        ...(share ? { range: [0, 100] } : {}),
        ...(log ? { type: 'log', dtick: decadeStep(data.flatMap((trace) => trace.y)), exponentformat: 'power' } : {}),
      },
    },
  };
}

/** The cell (row, column) of region i, in reading order. */
export const cellOf = (i) => ({ row: Math.floor(i / GRID), column: i % GRID });

/** The index of the largest weight (the first of equals). */
export function argmax(row) {
  let best = 0;
  row.forEach((w, i) => {
    if (w > row[best]) best = i;
  });
  return best;
}

/**
 * A watched canvas at one decoding step: its 24 × 24 pixels in grey (0 white, 16 black), and over each of the 9
 * cells that step's weight: soft attention as an orange tint whose opacity is the weight, with the weight written
 * in the cell; a hard glimpse as the chosen cell outlined.
 * @param {{pixels: number[][], regions: number[][]}} watched an eval event's glimpse
 * @param {number} step the decoding step, 0-based (a row of `regions`)
 * @param {{hard: boolean, size?: number}} options
 */
export function canvasFigure(watched, step, { hard, size = 300 }) {
  const weights = watched.regions[step];
  const shapes = [];
  const annotations = [];
  const chosen = argmax(weights);
  weights.forEach((w, i) => {
    const { row, column } = cellOf(i);
    const box = { type: 'rect', xref: 'x', yref: 'y', x0: column * CELL - 0.5, x1: (column + 1) * CELL - 0.5, y0: row * CELL - 0.5, y1: (row + 1) * CELL - 0.5 };
    if (hard) {
      if (i === chosen) shapes.push({ ...box, name: `cell-${i}`, line: { color: HIGHLIGHT, width: 4 }, fillcolor: 'rgba(0,0,0,0)' });
    } else {
      shapes.push({ ...box, name: `cell-${i}`, line: { color: 'rgba(240,140,0,0.6)', width: 1 }, fillcolor: HIGHLIGHT, opacity: Math.min(1, Math.max(0, w)) * 0.6 });
      annotations.push({
        x: column * CELL + CELL / 2 - 0.5, y: row * CELL + 1.2, xref: 'x', yref: 'y', text: w.toFixed(2), showarrow: false,
        font: { size: 12, color: TEXT_COLOUR }, bgcolor: 'rgba(255,255,255,0.8)', name: `weight-${i}`,
      });
    }
  });
  // grid lines between the cells
  for (let k = 1; k < GRID; k += 1) {
    const at = k * CELL - 0.5;
    shapes.push({ type: 'line', xref: 'x', yref: 'y', x0: at, x1: at, y0: -0.5, y1: SIDE - 0.5, line: { color: '#ced4da', width: 1 } });
    shapes.push({ type: 'line', xref: 'x', yref: 'y', x0: -0.5, x1: SIDE - 0.5, y0: at, y1: at, line: { color: '#ced4da', width: 1 } });
  }
  return {
    data: [{
      type: 'heatmap', z: watched.pixels, zmin: 0, zmax: MAX_PIXEL, colorscale: [[0, '#ffffff'], [1, '#111111']],
      showscale: false, hoverinfo: 'skip',
    }],
    layout: {
      ...LAYOUT,
      width: size,
      height: size,
      margin: { t: 4, r: 4, b: 4, l: 4 },
      xaxis: { visible: false, range: [-0.5, SIDE - 0.5], fixedrange: true, constrain: 'domain' },
      yaxis: { visible: false, range: [SIDE - 0.5, -0.5], fixedrange: true, scaleanchor: 'x' },
      shapes,
      annotations,
    },
  };
}

/** What a step emitted, in words: a digit, or END. */
export const tokenText = (token) => (token === END ? t('glimpse.token.end') : String(token));

/**
 * The token a watched canvas's step emitted: its output's digit, or END after them (a step past a reading that never
 * ended does not exist: `regions` has as many rows as steps taken).
 */
export const emitted = (watched, step) => (step < watched.output.length ? watched.output[step] : END);

// ---- the verdict: what the finished runs' numbers say ------------------------------------------------------------

/** The last eval event of a run. */
const last = (evals) => evals?.at(-1) ?? null;

/**
 * At the last evaluation of both, how many decoding steps of the watched canvases soft attention's largest weight and
 * a hard method's glimpse fall on the same cell: {same, total} over the steps both took.
 */
export function agreement(softEval, hardEval) {
  let same = 0;
  let total = 0;
  softEval.glimpses.forEach((soft, i) => {
    const hard = hardEval.glimpses[i];
    const steps = Math.min(soft.regions.length, hard.regions.length);
    for (let s = 0; s < steps; s += 1) {
      total += 1;
      if (argmax(soft.regions[s]) === argmax(hard.regions[s])) same += 1;
    }
  });
  return { same, total };
}

/**
 * The sentences under the table, as [key, values] pairs, from the finished runs' `done` events and eval events (a
 * node test and the browser test recompute them): which run read the most test canvases exactly; how many times
 * REINFORCE's gradient variance was Gumbel-softmax's and straight-through's at the last evaluation; what the
 * baseline did (when the run without it finished); the temperature's first and last values; and where soft
 * attention and each hard method looked at the same cell.
 * @param {Object<string, object>} done the `done` event of each finished run
 * @param {Object<string, object[]>} evals each run's eval events
 */
export function verdict(done, evals, locale = 'en') {
  const parts = [];
  const finished = RUNS.filter((run) => done[run]);
  if (!finished.length) return parts;
  const best = Math.max(...finished.map((run) => done[run].test_accuracy));
  const winners = finished.filter((run) => done[run].test_accuracy === best);
  parts.push([winners.length === 1 ? 'glimpse.verdict.best' : 'glimpse.verdict.bestTied', {
    runs: winners.map((run) => t(`glimpse.run.${run}`)).join(t('glimpse.verdict.and')), percent: percent(best),
    digits: percent(Math.max(...winners.map((run) => done[run].digit_accuracy))),
  }]);
  const variance = (run) => (done[run] ? last(evals[run])?.grad_variance ?? null : null);
  const reinforce = variance('reinforce');
  for (const other of ['gumbel', 'straight_through']) {
    const theirs = variance(other);
    if (reinforce !== null && theirs !== null && theirs > 0) {
      parts.push([`glimpse.verdict.variance.${other}`, {
        ratio: significant(reinforce / theirs, locale), reinforce: varianceText(reinforce), other: varianceText(theirs),
        step: last(evals.reinforce).step,
      }]);
    }
  }
  const without = variance('nobaseline');
  if (reinforce !== null && without !== null && reinforce > 0) {
    parts.push([`glimpse.verdict.baseline.${without > reinforce ? 'helped' : 'didNotHelp'}`, {
      ratio: significant(without / reinforce, locale), without: percent(done.nobaseline.test_accuracy),
      with: percent(done.reinforce.test_accuracy),
    }]);
  }
  for (const run of ['gumbel', 'straight_through']) {
    const runEvals = evals[run] ?? [];
    if (done[run] && runEvals.length && runEvals[0].tau !== null) {
      parts.push([`glimpse.verdict.tau.${run}`, { start: significant(runEvals[0].tau, locale), end: significant(last(runEvals).tau, locale) }]);
    }
  }
  if (done.soft && last(evals.soft)) {
    for (const run of ['reinforce', 'gumbel', 'straight_through']) {
      if (!done[run] || !last(evals[run])) continue;
      const { same, total } = agreement(last(evals.soft), last(evals[run]));
      if (total) parts.push([`glimpse.verdict.agree.${run}`, { same, total }]);
    }
  }
  return parts;
}
