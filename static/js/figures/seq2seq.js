// Data -> Plotly figures for the encoder-decoder lab (/seq2seq): an alignment map (each output character's
// attention over the source characters), the loss and accuracy curves of the runs with and without attention, and
// their exact-match rate against the source's length. Pure: no DOM, no fetch (words through t()).
import { t } from '../i18n/index.js';
import { FONT, HIGHLIGHT, squareAxes, TEXT_COLOUR } from './axes.js';
import { plotlyColorscale } from './colormap.js';
import { escapeForPlotly } from './escape.js';

const LAYOUT = Object.freeze({
  font: { family: FONT, size: 12, color: TEXT_COLOUR },
  paper_bgcolor: '#ffffff',
  plot_bgcolor: '#ffffff',
  hoverlabel: { font: { family: FONT, size: 12 } },
});
export const ATTENTION_COLOUR = '#2457c5';
export const PLAIN_COLOUR = HIGHLIGHT;
const GRID = '#eef0f3';

/** A character as an axis label: a space shown as ␣ (data, escaped for Plotly). */
const charLabel = (c) => (c === ' ' ? '␣' : escapeForPlotly(c));

/**
 * One alignment: rows the output characters, columns the source characters, each row summing to 1, on 0…1.
 * @param {{source: string[], target: string[], weights: number[][], height?: number}} alignment
 */
export function alignmentFigure({ source, target, weights, height = 420 }) {
  if (weights.length === 0) { // before the first evaluation: an empty frame, no axes to title
    return { data: [], layout: { ...LAYOUT, height, margin: { t: 8, r: 8, b: 8, l: 8 }, xaxis: { visible: false }, yaxis: { visible: false } } };
  }
  const xs = source.map((_, i) => i);
  const ys = target.map((_, i) => i);
  const sourceLabels = source.map(charLabel);
  const targetLabels = target.map(charLabel);
  const axes = squareAxes({ tickvals: xs, ticktext: sourceLabels, x: t('seq2seq.map.source'), y: t('seq2seq.map.output'), tickangle: 0, standoff: 4 });
  axes.yaxis = { ...axes.yaxis, tickvals: ys, ticktext: targetLabels }; // rows: the output's own characters
  return {
    data: [{
      type: 'heatmap', z: weights, x: xs, y: ys,
      text: targetLabels.map((out, i) => sourceLabels.map((src, j) => t('seq2seq.map.hover', { out, i, src, j }))),
      hovertemplate: '%{text}: %{z:.4f}<extra></extra>',
      colorscale: plotlyColorscale(), zmin: 0, zmax: 1, colorbar: { thickness: 10, len: 0.8 }, xgap: 1, ygap: 1,
    }],
    layout: {
      ...LAYOUT,
      height,
      margin: { t: 8, r: 8, b: 8, l: 8 },
      ...axes,
    },
  };
}

function stepAxis(steps) {
  return { title: { text: t('seq2seq.step'), standoff: 4 }, range: [0, Math.max(1, steps)], zeroline: false, gridcolor: GRID };
}

/**
 * A curve per run (with attention, and without when trained): the evaluation loss or the exact-match rate.
 * @param {{steps: number, kind: 'loss'|'accuracy', both: boolean}} options
 */
export function curvesFigure({ steps, kind, both }) {
  const line = (name, color, dash) => ({
    type: 'scatter', mode: 'lines', name, x: [], y: [], line: { color, width: 2, dash },
    hovertemplate: `${t('seq2seq.step')} %{x}: %{y:${kind === 'loss' ? '.3f' : '.1%'}}<extra>%{fullData.name}</extra>`,
  });
  const data = [line(t('seq2seq.run.attention'), ATTENTION_COLOUR, 'solid')];
  if (both) data.push(line(t('seq2seq.run.plain'), PLAIN_COLOUR, 'dash'));
  return {
    data,
    layout: {
      ...LAYOUT,
      height: 230,
      title: { text: t(`seq2seq.curves.${kind}`), x: 0.01, xanchor: 'left', font: { size: 13 } },
      margin: { t: 30, r: 12, b: 40, l: 56 },
      legend: { orientation: 'h', x: 1, xanchor: 'right', y: 1.02, yanchor: 'bottom' },
      xaxis: stepAxis(steps),
      yaxis: kind === 'loss'
        ? { title: { text: t('seq2seq.curves.lossAxis'), standoff: 4 }, rangemode: 'tozero', gridcolor: GRID }
        : { title: { text: t('seq2seq.curves.accuracyAxis'), standoff: 4 }, range: [0, 1.04], tickformat: '.0%', gridcolor: GRID },
    },
  };
}

/**
 * Exact-match rate against the source's length, for each run's latest evaluation.
 * @param {{attention: object|null, plain: object|null}} byLength accuracy_by_length of each run ({"12": 0.5, …})
 */
export function lengthFigure({ attention, plain }) {
  const bars = (name, byLength, color) => {
    const lengths = Object.keys(byLength).map(Number).sort((a, b) => a - b);
    return {
      type: 'bar', name, x: lengths, y: lengths.map((n) => byLength[String(n)]), marker: { color },
      hovertemplate: `${t('seq2seq.length.axis')} %{x}: %{y:.1%}<extra>%{fullData.name}</extra>`,
    };
  };
  const data = [];
  if (attention) data.push(bars(t('seq2seq.run.attention'), attention, ATTENTION_COLOUR));
  if (plain) data.push(bars(t('seq2seq.run.plain'), plain, PLAIN_COLOUR));
  return {
    data,
    layout: {
      ...LAYOUT,
      height: 280,
      barmode: 'group',
      margin: { t: 10, r: 12, b: 44, l: 56 },
      legend: { orientation: 'h', x: 1, xanchor: 'right', y: 1.02, yanchor: 'bottom' },
      xaxis: { title: { text: t('seq2seq.length.axis'), standoff: 4 }, dtick: 1, gridcolor: GRID },
      yaxis: { title: { text: t('seq2seq.curves.accuracyAxis'), standoff: 4 }, range: [0, 1.04], tickformat: '.0%', gridcolor: GRID },
    },
  };
}
