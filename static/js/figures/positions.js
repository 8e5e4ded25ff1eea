// Data -> Plotly figures for the positional encodings page: a table as a position × dimension
// heatmap, how alike two positions are as a function of their distance, RoPE's rotation of one
// pair of dimensions, and ALiBi's bias of every head. Pure: no DOM, no fetch (words through t()).
import { t } from '../i18n/index.js';
import { FONT, HIGHLIGHT, TEXT_COLOUR } from './axes.js';
import { plotlyColorscale } from './colormap.js';
import { signedColorscale, signedRange } from './matrix.js';

const LAYOUT = Object.freeze({
  font: { family: FONT, size: 12, color: TEXT_COLOUR },
  paper_bgcolor: '#ffffff',
  plot_bgcolor: '#ffffff',
  hoverlabel: { font: { family: FONT, size: 12 } },
});

/**
 * A table (position, dimension) as a heatmap with a colour scale symmetric around 0, spanning the
 * 99.5th percentile of |value| so that one outlier dimension of a learned table hides nothing.
 */
export function tableFigure(matrix, { height = 320 } = {}) {
  const m = signedRange(matrix);
  return {
    data: [{
      type: 'heatmap',
      z: matrix,
      colorscale: signedColorscale(),
      zmin: -m,
      zmax: m,
      hovertemplate: `${t('positions.position')} %{y} · ${t('positions.dimension')} %{x}: %{z:.4f}<extra></extra>`,
      colorbar: { thickness: 8, len: 1, outlinewidth: 0, tickfont: { size: 10 } },
    }],
    layout: {
      ...LAYOUT,
      height,
      margin: { t: 8, r: 8, b: 40, l: 48 },
      xaxis: { title: { text: t('positions.dimension'), standoff: 4 }, zeroline: false, showgrid: false },
      yaxis: { title: { text: t('positions.position'), standoff: 4 }, autorange: 'reversed', zeroline: false, showgrid: false },
    },
  };
}

/**
 * How alike positions p and p + k are, for every distance k: the mean over p of the cosine of the
 * angle between their vectors (rows of the table). 1 at k = 0.
 * @param {number[][]} matrix (position, dimension)
 * @returns {number[]} one value per distance 0..N-1
 */
export function similarityByDistance(matrix) {
  const norms = matrix.map((row) => Math.hypot(...row) || 1);
  return matrix.map((_, k) => {
    let sum = 0;
    for (let p = 0; p + k < matrix.length; p += 1) {
      let dot = 0;
      for (let d = 0; d < matrix[p].length; d += 1) dot += matrix[p][d] * matrix[p + k][d];
      sum += dot / (norms[p] * norms[p + k]);
    }
    return sum / (matrix.length - k);
  });
}

/** Lines of similarityByDistance for each named table: [{name, values}]. */
export function distanceFigure(curves) {
  return {
    data: curves.map(({ name, values }, i) => ({
      type: 'scatter',
      mode: 'lines',
      name,
      x: values.map((_, k) => k),
      y: values,
      line: { width: 2, color: i === 0 ? '#2457c5' : HIGHLIGHT },
      hovertemplate: `${t('positions.distance')} %{x}: %{y:.3f}<extra>%{fullData.name}</extra>`,
    })),
    layout: {
      ...LAYOUT,
      height: 300,
      margin: { t: 8, r: 8, b: 44, l: 56 },
      legend: { orientation: 'h', y: 1.12, x: 0 },
      xaxis: { title: { text: t('positions.distance'), standoff: 4 }, zeroline: false },
      yaxis: { title: { text: t('positions.similarity'), standoff: 4 }, range: [-1.05, 1.05], zeroline: true },
    },
  };
}

/**
 * RoPE's rotation of dimensions (2i, 2i+1): the unit vector (1, 0) turned by angle θ[p][i] at each
 * position p, drawn on the unit circle and labelled with p.
 * @param {number[][]} angles (position, pair)
 * @param {number} pair i
 * @param {number} count how many positions to draw
 */
export function rotationFigure(angles, pair, count) {
  const shown = angles.slice(0, count).map((row) => row[pair]);
  const circle = Array.from({ length: 121 }, (_, k) => (2 * Math.PI * k) / 120);
  return {
    data: [
      {
        type: 'scatter', mode: 'lines', x: circle.map(Math.cos), y: circle.map(Math.sin),
        line: { color: '#c9d0da', width: 1 }, hoverinfo: 'skip', showlegend: false,
      },
      {
        type: 'scatter',
        mode: 'markers+text',
        x: shown.map(Math.cos),
        y: shown.map(Math.sin),
        text: shown.map((_, p) => String(p)),
        textposition: 'top center', // ui-text: not UI (a Plotly keyword)
        textfont: { size: 10 },
        customdata: shown,
        marker: { size: 8, color: shown.map((_, p) => p), colorscale: 'Viridis' }, // ui-text: not UI (a Plotly scale)
        hovertemplate: `${t('positions.position')} %{text}: θ = %{customdata:.3f}<extra></extra>`,
        showlegend: false,
      },
    ],
    layout: {
      ...LAYOUT,
      height: 320,
      margin: { t: 8, r: 8, b: 32, l: 40 },
      xaxis: { range: [-1.25, 1.25], zeroline: true, showgrid: false, constrain: 'domain' },
      yaxis: { range: [-1.25, 1.25], zeroline: true, showgrid: false, scaleanchor: 'x', scaleratio: 1 },
    },
  };
}

/** The angles θ[p][i] as a heatmap (position, pair). */
export function anglesFigure(angles) {
  return {
    data: [{
      type: 'heatmap',
      z: angles,
      colorscale: 'Viridis', // ui-text: not UI (a Plotly scale)
      hovertemplate: `${t('positions.position')} %{y} · ${t('positions.pair')} %{x}: θ = %{z:.3f}<extra></extra>`,
      colorbar: { thickness: 8, len: 1, outlinewidth: 0, tickfont: { size: 10 } },
    }],
    layout: {
      ...LAYOUT,
      height: 320,
      margin: { t: 8, r: 8, b: 40, l: 48 },
      xaxis: { title: { text: t('positions.pair'), standoff: 4 }, zeroline: false, showgrid: false },
      yaxis: { title: { text: t('positions.position'), standoff: 4 }, autorange: 'reversed', zeroline: false, showgrid: false },
    },
  };
}

/** One head's ALiBi bias (query, key), with its slope in the title. */
export function alibiFigure(bias, head, slope, low) {
  return {
    data: [{
      type: 'heatmap',
      z: bias,
      zmin: low,
      zmax: 0,
      colorscale: plotlyColorscale(), // 0 (no penalty) darkest, like an attention weight
      showscale: false,
      hovertemplate: `${t('figure.query')} %{y} · ${t('figure.key')} %{x}: %{z:.4f}<extra></extra>`,
    }],
    layout: {
      ...LAYOUT,
      height: 170,
      title: { text: t('positions.alibiHead', { head, slope: slope.toPrecision(3) }), font: { size: 11 }, x: 0.5, y: 0.97 },
      margin: { t: 24, r: 4, b: 16, l: 22 },
      xaxis: { showgrid: false, zeroline: false, tickfont: { size: 9 }, constrain: 'domain' },
      yaxis: { showgrid: false, zeroline: false, tickfont: { size: 9 }, autorange: 'reversed', scaleanchor: 'x', scaleratio: 1 },
    },
  };
}
