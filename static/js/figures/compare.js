// Data -> Plotly figures of the compare page (/compare): one head's map of sentence A or B on a
// sequential scale shared by both, and their difference A − B on a diverging scale symmetric
// around 0. Pure: no DOM, no fetch (the words come from the page's dictionary through t()).
import { t } from '../i18n/index.js';
import { matrixAbsMax, PLOTLY_DIVERGING, PLOTLY_SEQUENTIAL } from './colormap.js';
import { FONT, mapColorbar, squareAxes, TEXT_COLOUR, tickIndices, tickLabel, tokenLabel } from './axes.js';
import { escapeForPlotly } from './escape.js';

const LABEL_PX = 13; // vertical room one tick label needs

// The site's scales (figures/colormap.js): viridis for weights; for A − B, blue (A gives less weight
// than B), near-white (equal), red (A gives more).
const sequentialScale = () => PLOTLY_SEQUENTIAL.map(([p, colour]) => [p, colour]);
const divergingScale = () => PLOTLY_DIVERGING.map(([p, colour]) => [p, colour]);

/** A − B entry by entry (equal shapes). */
export function difference(a, b) {
  return a.map((row, q) => row.map((value, k) => value - b[q][k]));
}

/** The label of a unit (token or word) of A, or "a / b" where B's differs at that position. */
export function pairLabel(unitA, unitB) {
  const a = tokenLabel(unitA);
  if (!unitB) return a;
  const b = tokenLabel(unitB);
  return a === b ? a : `${a} / ${b}`;
}

/**
 * One heatmap figure.
 * @param {{labels: string[], matrix: number[][], title: string, zmin: number, zmax: number,
 *   colorscale: Array<[number, string]>, size?: number}} input labels: raw text
 *   (escaped here), one per row and column; size: the figure's width in pixels (thins the tick labels)
 */
export function compareFigure({ labels, matrix, title, zmin, zmax, colorscale, size = 480 }) {
  const n = labels.length;
  const safe = labels.map((label) => escapeForPlotly(label));
  const index = safe.map((_, i) => i);
  const ticks = tickIndices(n, Math.max(8, Math.floor((size - 120) / LABEL_PX)));
  return {
    data: [{
      type: 'heatmap',
      z: matrix,
      x: index,
      y: index,
      text: safe.map((q) => safe.map((k) => `${q} → ${k}`)),
      hovertemplate: '%{text}: %{z:.4f}<extra></extra>',
      colorscale,
      zmin,
      zmax,
      colorbar: mapColorbar(zmin, zmax),
    }],
    layout: {
      title: { text: escapeForPlotly(title), x: 0.5, xanchor: 'center', font: { size: 15 } },
      font: { family: FONT, size: 12, color: TEXT_COLOUR },
      margin: { t: 40, r: 10, b: 10, l: 10 },
      paper_bgcolor: '#ffffff',
      plot_bgcolor: '#ffffff',
      ...squareAxes({
        tickvals: ticks, ticktext: ticks.map((i) => tickLabel(labels[i])), x: t('figure.key'), y: t('figure.query'),
        fontSize: n <= 24 ? 12 : n <= 40 ? 11 : 10,
      }),
      hoverlabel: { font: { family: FONT, size: 13 } },
    },
  };
}

/** Sentence A's or B's map on the sequential scale from 0 to `zmax` (shared by A and B). */
export function sentenceFigure({ units, matrix, title, zmax, size }) {
  return compareFigure({
    labels: units.map((unit) => tokenLabel(unit)), matrix, title, zmin: 0, zmax: zmax || 1,
    colorscale: sequentialScale(), size,
  });
}

/** A − B on the diverging scale from −max to +max (0 in the middle, white). */
export function differenceFigure({ unitsA, unitsB, matrix, title, size }) {
  const max = matrixAbsMax(matrix) || 1e-6;
  return compareFigure({
    labels: unitsA.map((unit, i) => pairLabel(unit, unitsB[i])), matrix, title, zmin: -max, zmax: max,
    colorscale: divergingScale(), size,
  });
}
