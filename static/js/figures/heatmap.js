// Data -> Plotly figure for one head's attention map. Pure: no DOM, no fetch (the words come
// from the page's dictionary through t()).
import { t } from '../i18n/index.js';
import { FONT, HIGHLIGHT, keepTicks, TEXT_COLOUR, tickIndices, tokenLabel } from './axes.js';
import { matrixMax, plotlyColorscale } from './colormap.js';
import { escapeForPlotly } from './escape.js';

const LABEL_PX = 13; // vertical room one tick label of the large map needs

/**
 * @param {{tokens: Array<{text: string, display?: string, unknown?: boolean}>, matrix: number[][],
 *          layer: number, head: number, query?: number|null, size?: number}} input matrix is
 *   (query, key), as the API sends it; `query` is outlined (its row always labelled); size is the
 *   figure's width in pixels, used to thin out tick labels that would overlap
 * @returns {{data: object[], layout: object}}
 */
export function attentionHeatmapFigure({ tokens, matrix, layer, head, query = null, size = 560 }) {
  const n = tokens.length;
  const labels = tokens.map((token) => escapeForPlotly(tokenLabel(token)));
  const index = labels.map((_, i) => i);
  const hover = labels.map((q) => labels.map((key) => `${q} → ${key}`));
  const maxTicks = Math.max(8, Math.floor((size - 140) / LABEL_PX));
  const every = tickIndices(n, maxTicks);
  const ticks = query === null ? every : keepTicks(every, [query], Math.ceil(n / maxTicks));
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
        text: t('figure.layerHead', { layer, head }),
        x: 0.5,
        xanchor: 'center',
        font: { size: 16 },
      },
      font: { family: FONT, size: 12, color: TEXT_COLOUR },
      margin: { t: 44, r: 10, b: 10, l: 10 },
      paper_bgcolor: '#ffffff',
      plot_bgcolor: '#ffffff',
      xaxis: { ...axis, title: { text: t('figure.key'), standoff: 6 }, tickangle: -50 },
      yaxis: {
        ...axis,
        title: { text: t('figure.query'), standoff: 6 },
        autorange: 'reversed', // first query at the top
        scaleanchor: 'x',
        scaleratio: 1,
      },
      hoverlabel: { font: { family: FONT, size: 13 } },
      shapes: query === null || n === 0 ? [] : [{
        type: 'rect', xref: 'x', yref: 'y', x0: -0.5, x1: n - 0.5, y0: query - 0.5, y1: query + 0.5,
        line: { color: HIGHLIGHT, width: 2 }, fillcolor: 'rgba(0,0,0,0)',
      }],
    },
  };
}
