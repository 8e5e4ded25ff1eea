// Data -> Plotly figures and sentences for the Informer lab (/informer): both networks' validation MSE against the
// step and against the seconds (the seasonal-naive test MSE as a reference line once known), a window's forecast
// over its history and truth, one attention layer's heatmap with the active queries' rows marked, the measured
// forward sweep, and what the numbers say (the verdict, the crossover). Pure: no DOM, no fetch (words through t()).
import { t } from '../i18n/index.js';
import { FONT, HIGHLIGHT, TEXT_COLOUR } from './axes.js';
import { plotlyColorscale } from './colormap.js';

const LAYOUT = Object.freeze({
  font: { family: FONT, size: 12, color: TEXT_COLOUR },
  paper_bgcolor: '#ffffff',
  plot_bgcolor: '#ffffff',
  hoverlabel: { font: { family: FONT, size: 12 } },
});
const GRID = '#eef0f3';
export const KINDS = Object.freeze(['probsparse', 'full']);
export const COLOURS = Object.freeze({ probsparse: '#2457c5', full: HIGHLIGHT, naive: '#6b7280', truth: '#1b2330' });
const DASH = { probsparse: 'solid', full: 'dash' };
const LEGEND = { orientation: 'h', x: 1, xanchor: 'right', y: 1.02, yanchor: 'bottom' };

/** An MSE in words: four significant digits, no grouping (the same in every language). */
export function mse(x, locale = 'en') {
  return new Intl.NumberFormat(locale, { maximumSignificantDigits: 4, useGrouping: false }).format(x);
}

/** A number with `digits` significant digits, no grouping. */
export const significant = (x, digits, locale = 'en') => new Intl.NumberFormat(locale, { maximumSignificantDigits: digits, useGrouping: false }).format(x);

/** Seconds with one decimal. */
export const secondsText = (x) => x.toFixed(1);

/**
 * Validation MSE of both runs against the step or the seconds; a dotted line at the seasonal-naive test MSE when
 * it is known.
 * @param {{x: 'step'|'seconds', runs: {probsparse: object[], full: object[]}, steps: number, naive: number|null,
 *   unit: string}} options runs: each run's eval events so far
 */
export function curvesFigure({ x, runs, steps, naive = null, unit = '' }) {
  const data = KINDS.map((kind) => ({
    type: 'scatter', mode: 'lines+markers', name: t(`informer.run.${kind}`),
    x: (runs[kind] ?? []).map((e) => e[x]), y: (runs[kind] ?? []).map((e) => e.val_mse),
    line: { color: COLOURS[kind], width: 2, dash: DASH[kind] }, marker: { size: 4 },
    hovertemplate: `${t(`informer.axis.${x}`)} %{x}: %{y:.4g}<extra>%{fullData.name}</extra>`,
  }));
  const right = Math.max(1e-9, x === 'step' ? steps : Math.max(0, ...KINDS.flatMap((kind) => (runs[kind] ?? []).map((e) => e.seconds))));
  if (naive !== null) {
    data.push({
      type: 'scatter', mode: 'lines', name: t('informer.curves.naive'), x: [0, right], y: [naive, naive],
      line: { color: COLOURS.naive, width: 1.5, dash: 'dot' }, hovertemplate: `%{y:.4g}<extra>%{fullData.name}</extra>`,
    });
  }
  return {
    data,
    layout: {
      ...LAYOUT,
      height: 280,
      title: { text: t(`informer.curves.by.${x}`), x: 0.01, xanchor: 'left', font: { size: 13 } },
      margin: { t: 56, r: 12, b: 44, l: 60 },
      legend: LEGEND,
      xaxis: { title: { text: t(`informer.axis.${x}`), standoff: 4 }, range: x === 'step' ? [0, Math.max(1, steps)] : undefined, zeroline: false, gridcolor: GRID },
      // ticks at the powers of 10 only: Plotly's in-between labels (2, 5) read as values of their own
      yaxis: { title: { text: t('informer.axis.mse', { unit }), standoff: 4 }, type: 'log', dtick: 1, tickformat: '~g', gridcolor: GRID },
    },
  };
}

/**
 * A test window: its history, the true horizon, each network's forecast and the seasonal-naive one.
 * @param {{probsparse: object|null, full: object|null}} watched /watch's answers (same window)
 */
export function forecastFigure(watched, { unit = '', height = 320 } = {}) {
  const any = watched.probsparse ?? watched.full;
  if (!any) return { data: [], layout: { ...LAYOUT, height, margin: { t: 8, r: 8, b: 8, l: 8 }, xaxis: { visible: false }, yaxis: { visible: false } } };
  const split = any.history.length;
  const past = any.times.slice(0, split);
  const ahead = any.times.slice(split);
  const line = (name, x, y, color, dash = 'solid', width = 2) => ({
    type: 'scatter', mode: 'lines', name, x, y, line: { color, width, dash }, hovertemplate: `%{x:.2f}: %{y:.4g}<extra>%{fullData.name}</extra>`,
  });
  const data = [
    line(t('informer.forecast.history'), past, any.history, COLOURS.truth, 'solid', 1.5),
    line(t('informer.forecast.truth'), ahead, any.truth, COLOURS.truth, 'solid', 2.5),
    line(t('informer.forecast.naive'), ahead, any.naive, COLOURS.naive, 'dot'),
  ];
  for (const kind of KINDS) {
    if (watched[kind]) data.push(line(t(`informer.run.${kind}`), ahead, watched[kind].forecast, COLOURS[kind], DASH[kind]));
  }
  return {
    data,
    layout: {
      ...LAYOUT,
      height,
      margin: { t: 30, r: 12, b: 44, l: 60 },
      legend: LEGEND,
      shapes: [{ type: 'line', xref: 'x', yref: 'paper', x0: ahead[0], x1: ahead[0], y0: 0, y1: 1, line: { color: '#9aa3af', width: 1, dash: 'dot' } }],
      xaxis: { title: { text: t('informer.axis.year'), standoff: 4 }, tickformat: '.6~g', gridcolor: GRID, zeroline: false },
      yaxis: { title: { text: unit, standoff: 4 }, gridcolor: GRID, zeroline: false },
    },
  };
}

/**
 * One attention layer's weights for one head (query rows, key columns); with ProbSparse a second trace marks each
 * active query's row with a triangle left of the map.
 * @param {{length: number, weights: number[][][], active: number[][]|null}} layer /watch's layer
 */
export function layerFigure(layer, head, { size = 320 } = {}) {
  const z = layer.weights[head];
  const active = layer.active ? layer.active[head] : [];
  const gutter = Math.max(2, layer.length / 24); // room left of key 0 for the marks
  return {
    data: [{
      type: 'heatmap', z, colorscale: plotlyColorscale(), zmin: 0, zmax: Math.max(1e-9, ...z.map((row) => Math.max(...row))),
      showscale: false, hovertemplate: `${t('informer.axis.query')} %{y} → ${t('informer.axis.key')} %{x}: %{z:.4f}<extra></extra>`,
    }, {
      type: 'scatter', mode: 'markers', name: t('informer.attention.active'), x: active.map(() => -gutter / 2 - 0.5), y: active,
      marker: { symbol: 'triangle-right', size: Math.max(4, Math.min(9, 300 / layer.length)), color: HIGHLIGHT },
      hovertemplate: `${t('informer.attention.active')}: ${t('informer.axis.query')} %{y}<extra></extra>`, showlegend: false,
    }],
    layout: {
      ...LAYOUT,
      width: size,
      height: size,
      margin: { t: 6, r: 6, b: 40, l: 44 },
      xaxis: { title: { text: t('informer.axis.key'), standoff: 2 }, range: [-0.5 - gutter, layer.length - 0.5], zeroline: false, showgrid: false },
      yaxis: { title: { text: t('informer.axis.query'), standoff: 2 }, range: [layer.length - 0.5, -0.5], zeroline: false, showgrid: false },
    },
  };
}

/** The heatmap's side in px: halving with the layer's length, never under 140 px nor over `max`. */
export const layerSize = (length, window, max) => Math.max(140, Math.round((max * length) / window));

// ---- the verdict: what the two finished runs' numbers say ----------------------------------------------------

/**
 * The sentences under the table, as [key, values] pairs, from the two `done` events (a node test recomputes them):
 * whether each network beat the seasonal-naive forecast, ProbSparse's test MSE as a percentage of full attention's,
 * and which finished sooner.
 */
export function verdict(done, locale = 'en') {
  const parts = KINDS.map((kind) => {
    const d = done[kind];
    const beat = d.test_mse < d.naive_mse;
    return [`informer.verdict.${beat ? 'beat' : 'notBeat'}.${kind}`, { test: mse(d.test_mse, locale), naive: mse(d.naive_mse, locale) }];
  });
  const share = (100 * done.probsparse.test_mse) / done.full.test_mse;
  parts.push(['informer.verdict.share', { percent: share.toFixed(1) }]);
  const [a, b] = [done.probsparse.seconds, done.full.seconds];
  const faster = a < b ? 'probsparse' : b < a ? 'full' : 'same';
  parts.push([`informer.verdict.faster.${faster}`, { probsparse: secondsText(a), full: secondsText(b) }]);
  return parts;
}

// ---- the measured sweep (bench/informer.py's static/data/informer-sweep.json) --------------------------------

/** The first measured L from which ProbSparse's forward is faster at every longer L too; null when none. */
export function measuredCrossover(sweep) {
  const { lengths } = sweep;
  let found = null;
  for (let i = lengths.length - 1; i >= 0; i -= 1) {
    if (sweep.probsparse.seconds[i] < sweep.full.seconds[i]) found = lengths[i];
    else break;
  }
  return found;
}

function sweepFigure(sweep, what) {
  const field = what === 'time' ? 'seconds' : 'peak_mb';
  const scale = what === 'time' ? 1000 : 1; // ms, MB
  const data = KINDS.map((kind) => ({
    type: 'scatter', mode: 'lines+markers', name: t(`informer.run.${kind}`), x: sweep.lengths,
    y: sweep[kind][field].map((v) => (v === null ? null : v * scale)),
    line: { color: COLOURS[kind], width: 2, dash: DASH[kind] },
    hovertemplate: `L = %{x}: %{y:.3g} ${t(`informer.sweep.${what}Unit`)}<extra>%{fullData.name}</extra>`, // ui-text: not UI (a key)
  }));
  return {
    data,
    layout: {
      ...LAYOUT,
      height: 300,
      title: { text: t(`informer.sweep.${what}Title`), x: 0.01, xanchor: 'left', font: { size: 13 } }, // ui-text: not UI (a key)
      margin: { t: 56, r: 12, b: 44, l: 60 },
      legend: LEGEND,
      xaxis: { title: { text: t('informer.sweep.length'), standoff: 4 }, type: 'log', tickvals: sweep.lengths, ticktext: sweep.lengths.map(String), gridcolor: GRID },
      yaxis: { title: { text: t(`informer.sweep.${what}Unit`), standoff: 4 }, type: 'log', dtick: 1, tickformat: '~g', gridcolor: GRID }, // ui-text: not UI (a key)
    },
  };
}

export const sweepTimeFigure = (sweep) => sweepFigure(sweep, 'time');
export const sweepMemoryFigure = (sweep) => sweepFigure(sweep, 'memory');

/** The crossover sentence's key and values, from the file's times. */
export function crossoverWords(sweep, locale = 'en') {
  const found = measuredCrossover(sweep);
  const last = sweep.lengths.length - 1;
  const values = {
    top: sweep.lengths[last], probsparse: significant(1000 * sweep.probsparse.seconds[last], 3, locale),
    full: significant(1000 * sweep.full.seconds[last], 3, locale),
    ratio: (sweep.full.seconds[last] / sweep.probsparse.seconds[last]).toFixed(1),
  };
  return found === null ? ['informer.sweep.never', values] : ['informer.sweep.crossover', { ...values, length: found }];
}

/** The bench's trainings at the defaults (the file's `seeds`): the seeds and the mean test MSE of each attention and
 * of the seasonal-naive forecast; null when the file has none. */
export function seedsWords(sweep, locale = 'en') {
  const runs = sweep.seeds ?? [];
  if (!runs.length) return null;
  const mean = (pick) => runs.reduce((sum, run) => sum + pick(run), 0) / runs.length;
  return ['informer.sweep.seeds', {
    seeds: runs.map((run) => run.seed).join(', '), series: t(`informer.series.${runs[0].series}`), // ui-text: not UI (a key)
    probsparse: mse(mean((run) => run.probsparse.test_mse), locale), full: mse(mean((run) => run.full.test_mse), locale),
    naive: mse(mean((run) => run.naive_mse), locale),
    beat: runs.filter((run) => run.probsparse.test_mse < run.naive_mse && run.full.test_mse < run.naive_mse).length,
    count: runs.length,
  }];
}
