// Data -> Plotly figures for the Iris page: the loss and accuracy curves of a training run (drawn
// empty with the whole epoch axis, then extended point by point), one head's 4 × 4 attention map
// of a flower, the test split's confusion matrix, the predicted species' probabilities, and the
// data set as a scatter of the petal measurements. Pure: no DOM, no fetch (words through t()).
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

export const LOSS_COLOUR = '#2457c5';
export const TRAIN_COLOUR = '#2457c5';
export const TEST_COLOUR = HIGHLIGHT;
// One colour per species (ColorBrewer Dark2), the same in every figure of the page.
export const SPECIES_COLOURS = Object.freeze(['#1b9e77', '#d95f02', '#7570b3']);

const percent = (value) => `${(100 * value).toFixed(1)} %`;

/** The epoch axis of a run of `epochs` epochs: 0 (untrained) to the last, fixed while it grows. */
function epochAxis(epochs) {
  return {
    title: { text: t('iris.epoch'), standoff: 4 },
    range: [0, Math.max(1, epochs)],
    zeroline: false,
    gridcolor: '#eef0f3',
  };
}

/** The loss axis, linear from 0 or logarithmic (a loss near 0 still shows its changes), as relayout updates. */
export function lossAxis(log) {
  return log
    ? { 'yaxis.type': 'log', 'yaxis.autorange': true, 'yaxis.rangemode': 'normal' }
    : { 'yaxis.type': 'linear', 'yaxis.autorange': true, 'yaxis.rangemode': 'tozero' };
}

/**
 * The loss curve of a run: one line, x = epoch, y = mean cross-entropy over the training split.
 * @param {{epochs: number, x?: number[], loss?: number[], log?: boolean}} run points so far (extended
 *   later); log: a logarithmic loss axis
 */
export function lossFigure({ epochs, x = [], loss = [], log = false }) {
  return {
    data: [{
      type: 'scatter',
      mode: 'lines',
      name: t('iris.loss'),
      x: [...x],
      y: [...loss],
      line: { color: LOSS_COLOUR, width: 2 },
      hovertemplate: `${t('iris.epoch')} %{x}: %{y:.4f}<extra></extra>`,
    }],
    layout: {
      ...LAYOUT,
      height: 280,
      margin: { t: 10, r: 12, b: 44, l: 56 },
      showlegend: false,
      xaxis: epochAxis(epochs),
      yaxis: {
        title: { text: t('iris.lossAxis'), standoff: 4 },
        type: log ? 'log' : 'linear',
        rangemode: log ? 'normal' : 'tozero',
        exponentformat: 'power', // 10⁻⁴, not Plotly's SI "100µ"
        gridcolor: '#eef0f3',
      },
    },
  };
}

/**
 * The accuracy curves of a run: on the training split and on the test split, in [0, 1].
 * @param {{epochs: number, x?: number[], train?: number[], test?: number[]}} run
 */
export function accuracyFigure({ epochs, x = [], train = [], test = [] }) {
  const line = (name, y, color) => ({
    type: 'scatter',
    mode: 'lines',
    name,
    x: [...x],
    y: [...y],
    line: { color, width: 2 },
    hovertemplate: `${t('iris.epoch')} %{x}: %{y:.1%}<extra>%{fullData.name}</extra>`,
  });
  return {
    data: [
      line(t('iris.trainAccuracy'), train, TRAIN_COLOUR),
      line(t('iris.testAccuracy'), test, TEST_COLOUR),
    ],
    layout: {
      ...LAYOUT,
      height: 280,
      margin: { t: 10, r: 12, b: 44, l: 56 },
      legend: { orientation: 'h', x: 1, xanchor: 'right', y: 0.04, yanchor: 'bottom', bgcolor: 'rgba(255,255,255,0.85)' },
      xaxis: epochAxis(epochs),
      yaxis: { title: { text: t('iris.accuracyAxis'), standoff: 4 }, range: [0, 1.04], tickformat: '.0%', gridcolor: '#eef0f3' },
    },
  };
}

/**
 * One head's attention over the four tokens of a flower: rows = the attending token (query),
 * columns = the token attended to (key), each row sums to 1. The colour scale is fixed to 0…1 so
 * that a map changing during training is seen changing (uniform attention is 0.25 everywhere).
 * @param {{matrix: number[][], labels: string[], head: number, height?: number}} input labels are
 *   the tokens' names (the feature each token is named after), raw text
 */
export function attentionFigure({ matrix, labels, head, height = 300 }) {
  const names = labels.map((label) => escapeForPlotly(label));
  const index = names.map((_, i) => i);
  return {
    data: [{
      type: 'heatmap',
      z: matrix,
      x: index,
      y: index,
      text: names.map((q) => names.map((k) => `${q} → ${k}`)),
      hovertemplate: '%{text}: %{z:.4f}<extra></extra>',
      texttemplate: '%{z:.2f}',
      textfont: { size: 12 },
      colorscale: plotlyColorscale(),
      zmin: 0,
      zmax: 1,
      showscale: false,
      xgap: 1,
      ygap: 1,
    }],
    layout: {
      ...LAYOUT,
      height,
      title: { text: t('iris.head', { head }), x: 0.5, xanchor: 'center', font: { size: 13 } },
      margin: { t: 30, r: 8, b: 8, l: 8 },
      ...squareAxes({ tickvals: index, ticktext: names, x: t('iris.keyAxis'), y: t('iris.queryAxis'), tickangle: -30, standoff: 4 }),
    },
  };
}

/**
 * The confusion matrix of the test split: rows = true species, columns = predicted, each cell the
 * number of flowers (the diagonal is what the model gets right).
 * @param {{confusion: number[][], classes: string[]}} input classes are the species' names, raw text
 */
export function confusionFigure({ confusion, classes }) {
  const names = classes.map((name) => escapeForPlotly(name));
  const index = names.map((_, i) => i);
  const top = Math.max(1, ...confusion.flat());
  return {
    data: [{
      type: 'heatmap',
      z: confusion,
      x: index,
      y: index,
      text: names.map((truth) => names.map((predicted) => t('iris.confusionHover', { truth, predicted }))),
      hovertemplate: '%{text}: %{z}<extra></extra>',
      texttemplate: '%{z}',
      textfont: { size: 15 },
      colorscale: plotlyColorscale(),
      zmin: 0,
      zmax: top,
      showscale: false,
      xgap: 2,
      ygap: 2,
    }],
    layout: {
      ...LAYOUT,
      height: 300,
      margin: { t: 8, r: 8, b: 8, l: 8 },
      ...squareAxes({ tickvals: index, ticktext: names, x: t('iris.predictedAxis'), y: t('iris.trueAxis'), tickangle: 'auto' }),
    },
  };
}

/**
 * The predicted probability of each species, the predicted one in its colour and the others pale.
 * @param {{probabilities: number[], classes: string[], predicted: number}} input
 */
export function probabilitiesFigure({ probabilities, classes, predicted }) {
  const names = classes.map((name) => escapeForPlotly(name));
  return {
    data: [{
      type: 'bar',
      orientation: 'h',
      x: probabilities,
      y: names,
      text: probabilities.map(percent),
      textposition: 'outside', // ui-text: not UI (a Plotly keyword)
      cliponaxis: false,
      hovertemplate: '%{y}: %{x:.4f}<extra></extra>',
      marker: { color: probabilities.map((_, i) => (i === predicted ? SPECIES_COLOURS[i % 3] : '#c9d0da')) },
    }],
    layout: {
      ...LAYOUT,
      height: 170,
      margin: { t: 6, r: 60, b: 34, l: 8 },
      bargap: 0.35,
      xaxis: { range: [0, 1], tickformat: '.0%', gridcolor: '#eef0f3', fixedrange: true, title: { text: t('iris.probabilityAxis'), standoff: 2 } },
      yaxis: { autorange: 'reversed', automargin: true, fixedrange: true, ticksuffix: '  ' },
    },
  };
}

/**
 * The data set on its two petal measurements, one colour per species: training flowers as dots,
 * test flowers as rings, the watched flower outlined, and (when given) the flower typed into the
 * predict form as a star.
 * @param {{rows: number[][], labels: number[], train: number[], test: number[], classes: string[],
 *   features: string[], watched: number, typed?: number[]|null}} input watched is a row index;
 *   classes and features are names as shown (raw text)
 */
export function dataFigure({ rows, labels, train, test, classes, features, watched, typed = null }) {
  const X = 2; // petal length
  const Y = 3; // petal width
  const traces = [];
  const ofSpecies = (indices, c) => indices.filter((i) => labels[i] === c);
  classes.forEach((name, c) => {
    for (const [indices, isTest] of [[train, false], [test, true]]) {
      const shown = ofSpecies(indices, c);
      traces.push({
        type: 'scatter',
        mode: 'markers',
        name: escapeForPlotly(`${name} · ${t(isTest ? 'iris.split.test' : 'iris.split.train')}`),
        legendgroup: String(c),
        x: shown.map((i) => rows[i][X]),
        y: shown.map((i) => rows[i][Y]),
        marker: isTest
          ? { size: 8, color: 'rgba(0,0,0,0)', line: { color: SPECIES_COLOURS[c], width: 2 } }
          : { size: 6, color: SPECIES_COLOURS[c], opacity: 0.75 },
        hovertemplate: `${escapeForPlotly(name)} · %{x} × %{y} cm<extra></extra>`,
      });
    }
  });
  traces.push({
    type: 'scatter',
    mode: 'markers',
    name: t('iris.watchedMarker'),
    x: [rows[watched][X]],
    y: [rows[watched][Y]],
    marker: { size: 16, color: 'rgba(0,0,0,0)', line: { color: TEXT_COLOUR, width: 2.5 } },
    hovertemplate: `${t('iris.watchedMarker')}: %{x} × %{y} cm<extra></extra>`,
  });
  if (typed) {
    traces.push({
      type: 'scatter',
      mode: 'markers',
      name: t('iris.typedMarker'),
      x: [typed[X]],
      y: [typed[Y]],
      marker: { size: 15, symbol: 'star', color: HIGHLIGHT, line: { color: TEXT_COLOUR, width: 1 } }, // ui-text: not UI (a Plotly symbol)
      hovertemplate: `${t('iris.typedMarker')}: %{x} × %{y} cm<extra></extra>`,
    });
  }
  return {
    data: traces,
    layout: {
      ...LAYOUT,
      height: 300,
      margin: { t: 8, r: 8, b: 44, l: 52 },
      legend: { font: { size: 11 } },
      xaxis: { title: { text: escapeForPlotly(`${features[X]} (cm)`), standoff: 4 }, gridcolor: '#eef0f3', zeroline: false },
      yaxis: { title: { text: escapeForPlotly(`${features[Y]} (cm)`), standoff: 4 }, gridcolor: '#eef0f3', zeroline: false },
    },
  };
}
