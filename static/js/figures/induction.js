// Data -> Plotly figures for the induction-head lab (/induction): the loss on each half of R R over training
// with ln(vocab) and the drop marked, every head's previous-token or induction score over training, and one
// head's map of the watched sequence with the repeated block outlined. Pure: no DOM, no fetch (words through
// t()); the curves are drawn empty over the whole step axis and extended as evaluations arrive.
import { t } from '../i18n/index.js';
import { FONT, HIGHLIGHT, squareAxes, TEXT_COLOUR } from './axes.js';
import { headColour, plotlyColorscale } from './colormap.js';

const LAYOUT = Object.freeze({
  font: { family: FONT, size: 12, color: TEXT_COLOUR },
  paper_bgcolor: '#ffffff',
  plot_bgcolor: '#ffffff',
  hoverlabel: { font: { family: FONT, size: 12 } },
});
export const FIRST_COLOUR = '#7a8594';
export const REPEATED_COLOUR = '#2457c5';
const GRID = '#eef0f3';
const DASHES = ['solid', 'dash', 'dot', 'dashdot'];

function stepAxis(steps) {
  return { title: { text: t('induction.step'), standoff: 4 }, range: [0, Math.max(1, steps)], zeroline: false, gridcolor: GRID };
}

/** The vertical line and label of the drop at `step` (none: null), as layout shapes and annotations. */
export function dropMarks(step) {
  if (step === null) return { shapes: [], annotations: [] };
  return {
    shapes: [{ type: 'line', xref: 'x', yref: 'paper', x0: step, x1: step, y0: 0, y1: 1, line: { color: HIGHLIGHT, width: 2 } }],
    annotations: [{
      xref: 'x', yref: 'paper', x: step, y: 1, xanchor: 'left', yanchor: 'top', showarrow: false,
      text: t('induction.loss.dropMark', { step }), font: { color: HIGHLIGHT, size: 12 }, bgcolor: 'rgba(255,255,255,0.85)',
    }],
  };
}

/**
 * Both losses over training: the first R's and the repeated R's, with ln(vocab) (a uniform guess) and half
 * of it (the drop's threshold) as horizontal lines, and the drop's step when there is one.
 * @param {{steps: number, vocab: number, x?: number[], first?: number[], repeated?: number[], drop?: number|null}} run
 */
export function lossFigure({ steps, vocab, x = [], first = [], repeated = [], drop = null }) {
  const line = (name, y, color) => ({
    type: 'scatter', mode: 'lines', name, x: [...x], y: [...y], line: { color, width: 2 },
    hovertemplate: `${t('induction.step')} %{x}: %{y:.3f}<extra>%{fullData.name}</extra>`,
  });
  const level = (y, dash) => ({
    type: 'line', xref: 'paper', yref: 'y', x0: 0, x1: 1, y0: y, y1: y, line: { color: '#9aa3ad', width: 1, dash },
  });
  const ln = Math.log(vocab);
  const marks = dropMarks(drop);
  return {
    data: [line(t('induction.loss.first'), first, FIRST_COLOUR), line(t('induction.loss.repeated'), repeated, REPEATED_COLOUR)],
    layout: {
      ...LAYOUT,
      height: 300,
      margin: { t: 10, r: 12, b: 44, l: 56 },
      legend: { orientation: 'h', x: 1, xanchor: 'right', y: 0.5, yanchor: 'middle', bgcolor: 'rgba(255,255,255,0.85)' },
      xaxis: stepAxis(steps),
      yaxis: { title: { text: t('induction.loss.axis'), standoff: 4 }, range: [0, 1.15 * ln + 0.2], gridcolor: GRID },
      shapes: [level(ln, 'dash'), level(ln / 2, 'dot'), ...marks.shapes],
      annotations: [
        { xref: 'paper', yref: 'y', x: 1, y: ln, xanchor: 'right', yanchor: 'top', showarrow: false,
          text: t('induction.loss.uniform', { value: ln.toFixed(2) }), font: { size: 11, color: '#5b6573' } },
        ...marks.annotations,
      ],
    },
  };
}

/**
 * Every head's score over training, one line per head (colour: the head, dash: the layer).
 * @param {{steps: number, layers: number, heads: number, kind: 'previous'|'induction', x?: number[],
 *   values?: number[][][]}} run values[layer][head] is the head's series
 */
export function scoresFigure({ steps, layers, heads, kind, x = [], values = null }) {
  const data = [];
  for (let layer = 0; layer < layers; layer += 1) {
    for (let head = 0; head < heads; head += 1) {
      const name = t('induction.headName', { layer, head });
      data.push({
        type: 'scatter', mode: 'lines', name, x: [...x], y: values ? [...values[layer][head]] : [],
        line: { color: headColour(head), width: 1.8, dash: DASHES[layer % DASHES.length] },
        hovertemplate: `${t('induction.step')} %{x}: %{y:.3f}<extra>${name}</extra>`,
      });
    }
  }
  return {
    data,
    layout: {
      ...LAYOUT,
      height: 230,
      title: { text: t(`induction.scores.${kind}`), x: 0.01, xanchor: 'left', font: { size: 13 } },
      margin: { t: 30, r: 12, b: 40, l: 56 },
      legend: { font: { size: 11 } },
      xaxis: stepAxis(steps),
      yaxis: { title: { text: t('induction.scores.axis'), standoff: 4 }, range: [0, 1.02], gridcolor: GRID },
      shapes: [{ type: 'line', xref: 'paper', yref: 'y', x0: 0, x1: 1, y0: 0.6, y1: 0.6, line: { color: '#9aa3ad', width: 1, dash: 'dot' } }],
    },
  };
}

/**
 * One head's attention over the watched sequence: rows the query, columns the key, 0…1 on a fixed scale;
 * the block where the second R's tokens look back at the first R outlined. In an induction head the weight
 * gathers on the line one to the right of that block's diagonal (the token after the same token).
 * @param {{matrix: number[][], tokens: number[], layer: number, head: number, height?: number}} input
 */
export function mapFigure({ matrix, tokens, layer, head, height = 460 }) {
  const n = tokens.length;
  const half = n / 2;
  const index = tokens.map((_, i) => i);
  const labels = tokens.map((token, i) => t('induction.map.position', { position: i, token }));
  const step = Math.max(1, Math.ceil(n / 24));
  const ticks = index.filter((i) => i % step === 0);
  return {
    data: [{
      type: 'heatmap', z: matrix, x: index, y: index,
      text: labels.map((q) => labels.map((k) => `${q} → ${k}`)),
      hovertemplate: '%{text}: %{z:.4f}<extra></extra>',
      colorscale: plotlyColorscale(), zmin: 0, zmax: 1, showscale: true, colorbar: { thickness: 10, len: 0.8 },
    }],
    layout: {
      ...LAYOUT,
      height,
      title: { text: t('induction.headName', { layer, head }), x: 0.5, xanchor: 'center', font: { size: 13 } },
      margin: { t: 30, r: 8, b: 8, l: 8 },
      ...squareAxes({ tickvals: ticks, ticktext: ticks.map(String), x: t('induction.map.key'), y: t('induction.map.query'), tickangle: 0, standoff: 4 }),
      shapes: [{
        type: 'rect', xref: 'x', yref: 'y', x0: -0.5, x1: half - 0.5, y0: half - 0.5, y1: n - 0.5,
        line: { color: HIGHLIGHT, width: 1.5, dash: 'dot' }, fillcolor: 'rgba(0,0,0,0)',
      }],
    },
  };
}
