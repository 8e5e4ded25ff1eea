// Why attention divides by √d_k, computed in the browser: for random query and key vectors whose
// entries are independent with mean 0 and variance 1, a score q·k has variance d, so its spread grows
// like √d. Unscaled, the softmax of a row of such scores puts nearly all its weight on one key as d
// grows (it saturates, and its gradient p(1 − p) goes to 0); divided by √d, the scores keep variance 1
// and the weights stay spread however wide the vectors are. Pure: no DOM, no fetch.
import { t } from '../i18n/index.js';
import { FONT, HIGHLIGHT, TEXT_COLOUR } from '../figures/axes.js';

/** A seeded generator of uniform numbers in [0, 1) (mulberry32: 32 bits of state, enough for a demo). */
export function seededRandom(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let x = a;
    x = Math.imul(x ^ (x >>> 15), x | 1);
    x ^= x + Math.imul(x ^ (x >>> 7), x | 61);
    return ((x ^ (x >>> 14)) >>> 0) / 4294967296;
  };
}

/** One draw of a standard normal number (Box–Muller on two uniform draws). */
export function gaussian(random) {
  const u = 1 - random(); // (0, 1]: the logarithm stays finite
  const v = random();
  return Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * v);
}

export const randomVector = (d, random) => Array.from({ length: d }, () => gaussian(random));

export function dot(a, b) {
  let sum = 0;
  for (let i = 0; i < a.length; i += 1) sum += a[i] * b[i];
  return sum;
}

/** softmax of a row, with its largest entry subtracted first (the same weights, no overflow). */
export function softmax(row) {
  const top = Math.max(...row);
  const e = row.map((x) => Math.exp(x - top));
  const total = e.reduce((s, x) => s + x, 0);
  return e.map((x) => x / total);
}

/**
 * One query against `n` keys of width d: the vectors, the raw scores q·k_j, the scaled scores
 * q·k_j / √d and the weights of each.
 */
export function sampleRow(d, n, random) {
  const query = randomVector(d, random);
  const keys = Array.from({ length: n }, () => randomVector(d, random));
  const raw = keys.map((key) => dot(query, key));
  const scaled = raw.map((s) => s / Math.sqrt(d));
  return { query, keys, raw, scaled, rawWeights: softmax(raw), scaledWeights: softmax(scaled) };
}

const mean = (xs) => xs.reduce((s, x) => s + x, 0) / xs.length;
const spread = (xs) => {
  const m = mean(xs);
  return Math.sqrt(mean(xs.map((x) => (x - m) ** 2)));
};

/** The widths the demo offers: powers of two from 1 to 1024. */
export const WIDTHS = Object.freeze(Array.from({ length: 11 }, (_, i) => 2 ** i));

/**
 * For each width d: averaged over `trials` rows of `keys` keys, the largest weight of a row
 * unscaled and scaled, and the spread (standard deviation) of the raw and the scaled scores.
 * @returns {{d: number, rawMax: number, scaledMax: number, rawSpread: number, scaledSpread: number}[]}
 */
export function saturation(widths = WIDTHS, { keys = 8, trials = 200, seed = 1 } = {}) {
  return widths.map((d) => {
    const random = seededRandom(seed * 1000003 + d);
    const rows = Array.from({ length: trials }, () => sampleRow(d, keys, random));
    return {
      d,
      rawMax: mean(rows.map((r) => Math.max(...r.rawWeights))),
      scaledMax: mean(rows.map((r) => Math.max(...r.scaledWeights))),
      rawSpread: spread(rows.flatMap((r) => r.raw)),
      scaledSpread: spread(rows.flatMap((r) => r.scaled)),
    };
  });
}

/** The curves against d (log axis), with the chosen width marked on both. */
export function saturationFigure(points, chosen, { keys = 8, height = 320 } = {}) {
  const x = points.map((p) => p.d);
  const here = points.find((p) => p.d === chosen) ?? null;
  const line = (name, y, colour, dash = 'solid') => ({
    type: 'scatter', mode: 'lines+markers', name, x, y,
    line: { color: colour, width: 2, dash }, marker: { size: 6, color: colour },
    hovertemplate: `d = %{x}: %{y:.3f}<extra>${name}</extra>`,
  });
  const data = [
    line(t('learn.sat.raw'), points.map((p) => p.rawMax), '#c92a2a'),
    line(t('learn.sat.scaled'), points.map((p) => p.scaledMax), '#2457c5'),
    line(t('learn.sat.uniform', { n: keys }), x.map(() => 1 / keys), '#8a94a6', 'dot'),
  ];
  if (here) {
    data.push({
      type: 'scatter', mode: 'markers', x: [here.d, here.d], y: [here.rawMax, here.scaledMax], showlegend: false,
      marker: { size: 13, color: 'rgba(0,0,0,0)', line: { color: HIGHLIGHT, width: 3 } }, hoverinfo: 'skip',
    });
  }
  return {
    data,
    layout: {
      font: { family: FONT, size: 12, color: TEXT_COLOUR },
      height,
      margin: { t: 10, r: 10, l: 52, b: 44 },
      paper_bgcolor: '#ffffff',
      plot_bgcolor: '#ffffff',
      xaxis: { type: 'log', title: { text: t('learn.sat.xaxis') }, tickvals: x, ticktext: x.map(String), fixedrange: true },
      yaxis: { range: [0, 1.02], title: { text: t('learn.sat.yaxis') }, fixedrange: true },
      legend: { orientation: 'h', y: -0.28, x: 0 },
    },
  };
}
