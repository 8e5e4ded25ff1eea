// Data -> Plotly bar chart of one query's attention weights over the keys. Pure.
import { escapeForPlotly } from './escape.js';
import { FONT, tickIndices, tickLabel } from './axes.js';
import { formatCell, formatValue, HIGHLIGHT } from './matrix.js';

const BAR = '#2171b5'; // a Blues stop: the same family as the weights' heatmap

/**
 * @param {{values: number[], labels: string[], name?: string|null, highlight?: number|null,
 *          height?: number}} input values[j] is the weight on key j; labels are raw token text;
 *   name says what a bar is on hover ("key"; null: the label says it)
 * @returns {{data: object[], layout: object}}
 */
export function barsFigure({ values, labels, name = 'key', highlight = null, height = 300 }) {
  const n = values.length;
  const x = values.map((_, j) => j);
  const ticks = tickIndices(n, 40);
  const longest = Math.max(0, ...labels.map((label) => Math.min(Array.from(String(label)).length, 14)));
  const top = Math.max(...values, 0);
  const trace = {
    type: 'bar',
    x,
    y: values,
    customdata: values.map((v, j) => escapeForPlotly(`${name ? `${name} ${j} “${labels[j]}”` : labels[j]}: ${formatValue(v)}`)),
    hovertemplate: '%{customdata}<extra></extra>',
    marker: {
      color: values.map((_, j) => (j === highlight ? HIGHLIGHT : BAR)),
    },
  };
  if (n <= 24) {
    trace.text = values.map((v) => formatCell(v));
    trace.texttemplate = '%{text}';
    trace.textposition = 'outside';
    trace.textfont = { size: 11, family: FONT };
    trace.cliponaxis = false;
  }
  return {
    data: [trace],
    layout: {
      font: { family: FONT, size: 12, color: '#1b2330' },
      height,
      margin: { t: 18, r: 10, l: 52, b: Math.round(16 + 6 * longest) },
      paper_bgcolor: '#ffffff',
      plot_bgcolor: '#ffffff',
      bargap: 0.2,
      xaxis: {
        tickmode: 'array',
        tickvals: ticks,
        ticktext: ticks.map((j) => tickLabel(labels[j])),
        tickangle: n > 6 ? -50 : 0,
        tickfont: { size: 11 },
        fixedrange: true,
        range: [-0.5, n - 0.5],
      },
      yaxis: {
        title: { text: 'weight', standoff: 4, font: { size: 12 } },
        range: [0, Math.max(top * 1.15, 1e-6)],
        tickformat: '.2f',
        gridcolor: '#e6e9ee',
        zeroline: true,
        zerolinecolor: '#9aa3b0',
        fixedrange: true,
      },
      hoverlabel: { font: { family: FONT, size: 12 } },
    },
  };
}
