// Data -> Plotly figure for one head's attention map. Pure: no DOM, no fetch.
import { escapeForPlotly } from './escape.js';
import { matrixMax, plotlyColorscale } from './colormap.js';

const FONT = 'system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif';
const LABEL_PX = 13; // vertical room one tick label needs

/** Which token indices get a tick label: all of them, or every k-th when they would overlap. */
export function tickIndices(n, maxTicks) {
  const step = Math.max(1, Math.ceil(n / maxTicks));
  const indices = [];
  for (let i = 0; i < n; i += step) indices.push(i);
  return indices;
}

/**
 * @param {{tokens: Array<{text: string}>, matrix: number[][], layer: number, head: number,
 *          size?: number}} input matrix is (query, key), as the API sends it; size is the
 *   figure's width in pixels, used to thin out tick labels that would overlap
 * @returns {{data: object[], layout: object}}
 */
export function attentionHeatmapFigure({ tokens, matrix, layer, head, size = 560 }) {
  const n = tokens.length;
  const labels = tokens.map((token) => escapeForPlotly(token.text));
  const index = labels.map((_, i) => i);
  const hover = labels.map((query) => labels.map((key) => `${query} → ${key}`));
  const ticks = tickIndices(n, Math.max(8, Math.floor((size - 140) / LABEL_PX)));
  const ticktext = ticks.map((i) => labels[i]);
  const tickFontSize = n <= 24 ? 12 : n <= 40 ? 11 : 10;
  const zmax = matrixMax(matrix) || 1;

  const axis = {
    tickmode: 'array',
    tickvals: ticks,
    ticktext,
    tickfont: { size: tickFontSize },
    showgrid: false,
    zeroline: false,
    showline: false,
    ticks: '',
    automargin: true,
    constrain: 'domain',
  };

  return {
    data: [
      {
        type: 'heatmap',
        z: matrix,
        x: index,
        y: index,
        text: hover,
        hovertemplate: '%{text}: %{z:.4f}<extra></extra>',
        colorscale: plotlyColorscale(),
        zmin: 0,
        zmax,
        colorbar: {
          thickness: 10,
          len: 0.9,
          xpad: 6,
          outlinewidth: 0,
          tickformat: '.2f',
          tickfont: { size: 11 },
        },
      },
    ],
    layout: {
      title: {
        text: `Layer ${layer} · Head ${head}`,
        x: 0.5,
        xanchor: 'center',
        font: { size: 16 },
      },
      font: { family: FONT, size: 12, color: '#1b2330' },
      margin: { t: 44, r: 10, b: 10, l: 10 },
      paper_bgcolor: '#ffffff',
      plot_bgcolor: '#ffffff',
      xaxis: { ...axis, title: { text: 'key', standoff: 6 }, tickangle: -50 },
      yaxis: {
        ...axis,
        title: { text: 'query', standoff: 6 },
        autorange: 'reversed', // first query at the top
        scaleanchor: 'x',
        scaleratio: 1,
      },
      hoverlabel: { font: { family: FONT, size: 13 } },
    },
  };
}
