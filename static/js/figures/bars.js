// Data -> Plotly bar chart of one query's attention weights over (a window of) the keys. Pure: no
// DOM, no fetch (the words come from the page's dictionary through t()).
import { t } from '../i18n/index.js';
import { FONT, HIGHLIGHT, MAX_LABEL_CHARS, TEXT_COLOUR, labelWidth, tickIndices, tickLabel } from './axes.js';
import { escapeForPlotly } from './escape.js';
import { formatCell, formatValue } from './matrix.js';

const BAR = '#2171b5'; // a Blues stop: the same family as the weights' heatmap
const LABEL_PX = 14; // room one upright tick label needs across its line (see matrix.js)

/**
 * @param {{values: number[], labels: string[], name?: string|null, highlight?: number|null,
 *          height?: number, offset?: number, barPx?: number|null}} input values[j] is the weight
 *   on key offset + j; labels are raw token text; name says what a bar is on hover ("key"; null:
 *   the label says it); barPx, when known, is the width of one bar's slot (to fit its label)
 * @returns {{data: object[], layout: object}}
 */
export function barsFigure({ values, labels, name = t('figure.key'), highlight = null, height = 300, offset = 0, barPx = null }) {
  const n = values.length;
  const x = values.map((_, j) => offset + j);
  const longest = Math.max(0, ...labels.map((label) => Math.min(labelWidth(label), MAX_LABEL_CHARS)));
  const across = n <= 6;
  const fit = barPx ? Math.max(1, Math.floor((n * barPx) / LABEL_PX)) : 40;
  const ticks = tickIndices(n, Math.min(40, fit));
  const top = Math.max(...values, 0);
  const trace = {
    type: 'bar',
    x,
    y: values,
    customdata: values.map((v, j) => escapeForPlotly(`${name ? `${name} ${offset + j} “${labels[j]}”` : labels[j]}: ${formatValue(v)}`)),
    hovertemplate: '%{customdata}<extra></extra>',
    marker: {
      color: values.map((_, j) => (offset + j === highlight ? HIGHLIGHT : BAR)),
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
      font: { family: FONT, size: 12, color: TEXT_COLOUR },
      height,
      margin: { t: 18, r: 10, l: 52, b: across ? 28 : Math.round(16 + 6.4 * longest) },
      paper_bgcolor: '#ffffff',
      plot_bgcolor: '#ffffff',
      bargap: 0.2,
      xaxis: {
        tickmode: 'array',
        tickvals: ticks.map((j) => offset + j),
        ticktext: ticks.map((j) => tickLabel(labels[j])),
        tickangle: across ? 0 : -90,
        tickfont: { size: 11 },
        fixedrange: true,
        range: [offset - 0.5, offset + n - 0.5],
      },
      yaxis: {
        title: { text: t('walk.word.weight'), standoff: 4, font: { size: 12 } },
        range: [0, Math.max(top * 1.15, 1e-6)],
        tickformat: top >= 0.1 ? '.2f' : '.3~f', // small weights (a window of a long input) need a third digit
        gridcolor: '#e6e9ee',
        zeroline: true,
        zerolinecolor: '#9aa3b0',
        fixedrange: true,
      },
      hoverlabel: { font: { family: FONT, size: 12 } },
    },
  };
}
