// Data -> Plotly figure for one matrix of an attention step: a heatmap with the
// token (or dimension) on each axis, optional highlight rectangles, thin lines
// between heads' column slots, and the numbers written in the cells when the
// matrix is small. Pure: no DOM, no fetch.
import { FONT, LABEL_PX, MAX_LABEL_CHARS, keepTicks, labelMargin, labelWidth, tickIndices, tickLabel } from './axes.js';
import { plotlyColorscale } from './colormap.js';
import { escapeForPlotly } from './escape.js';

export const HIGHLIGHT = '#f08c00'; // the same orange as the explorer's selected head
export const HIDDEN_GREY = '#b9c0ca'; // masked (−∞) cells: Plotly leaves null cells empty, showing this
export const NUMBERS_MAX = 16; // numbers are written in the cells up to 16 × 16

// ColorBrewer "PuOr", 11 classes, reversed: negative purple, zero near-white, positive orange.
// Distinct from the Blues used for attention weights.
const PUOR = [
  '#2d004b', '#542788', '#8073ac', '#b2abd2', '#d8daeb', '#f7f7f7',
  '#fee0b6', '#fdb863', '#e08214', '#b35806', '#7f3b08',
];

export function signedColorscale() {
  return PUOR.map((colour, i) => [i / (PUOR.length - 1), colour]);
}

function fixed(value, digits) {
  const text = value.toFixed(digits);
  return Number(text) === 0 ? (0).toFixed(digits) : text.replace('-', '−'); // no "−0.00"
}

/**
 * A value as written in a cell, short enough to fit: integers as they are, others with two
 * decimals (one from 10, none from 100); null (hidden) -> "−∞".
 */
export function formatCell(value) {
  if (value === null || value === undefined) return '−∞';
  if (Number.isInteger(value)) return String(value).replace('-', '−');
  const size = Math.abs(value);
  return fixed(value, size >= 100 ? 0 : size >= 10 ? 1 : 2);
}

/** A value as shown on hover: four decimals; null (hidden) -> "−∞". */
export function formatValue(value) {
  if (value === null || value === undefined) return '−∞';
  return Number.isInteger(value) ? String(value).replace('-', '−') : fixed(value, 4);
}

/**
 * Half-range m of a symmetric colour scale (−m…m) for signed matrices: the largest |value|,
 * or for large matrices the 99.5th percentile, so that one outlier dimension does not wash
 * out every other cell (hover still shows the real value).
 */
export function signedRange(...matrices) {
  const values = [];
  for (const matrix of matrices) {
    for (const row of matrix) for (const v of row) if (v !== null && Number.isFinite(v)) values.push(Math.abs(v));
  }
  if (!values.length) return 1;
  values.sort((a, b) => a - b);
  const m = values.length <= 1024 ? values[values.length - 1] : values[Math.floor(0.995 * (values.length - 1))];
  return m > 0 ? m : 1;
}

/** Largest entry (ignoring hidden ones); 1 when there is none above 0. */
export function valueMax(matrix) {
  let max = 0;
  for (const row of matrix) for (const v of row) if (v !== null && v > max) max = v;
  return max > 0 ? max : 1;
}

/** Single rows that a highlight outlines (the query's row): their labels are always drawn. */
function focusRows(highlights) {
  return highlights.filter((h) => h.row0 !== undefined && h.row0 === h.row1).map((h) => h.row0);
}

/** "query 3 “cat”", "dim 17", or just the label when there is no name (toy rows "q0"). */
function describe(name, index, label) {
  if (label === undefined || label === null) return `${name || '#'} ${index}`;
  return name ? `${name} ${index} “${label}”` : label;
}

/**
 * @param {object} o
 * @param {(number|null)[][]} o.z rows × columns; null = hidden (drawn grey, written "−∞")
 * @param {string[]} [o.rowLabels] raw text of each row (tokens): escaped here
 * @param {string|null} [o.rowName] what a row is, for hover text ("query", "key", "token", "dim");
 *   null: the label says it ("q0")
 * @param {string[]|null} [o.colLabels] raw text of each column, or null for numbered columns
 * @param {string} [o.colName] what a column is ("key", "dim")
 * @param {number} [o.colOffset] the first column's number (a slice of a wider matrix)
 * @param {number} [o.rowOffset] the first row's number (for numbered rows)
 * @param {'signed'|'weights'} [o.kind] diverging scale around 0, or Blues from 0
 * @param {number} [o.range] signed: half-range m (colours span −m…m); weights: the top of the scale
 * @param {number} [o.cellPx] height of one row in pixels
 * @param {boolean} [o.square] square cells (N×N maps)
 * @param {boolean|'auto'} [o.numbers] write the values in the cells ('auto': when ≤ 16 × 16)
 * @param {Array<{row0?: number, row1?: number, col0?: number, col1?: number}>} [o.highlights]
 *   rectangles to outline, inclusive matrix indices (missing = the whole extent)
 * @param {number} [o.slots] draw a thin line every `slots` columns (the heads' slices)
 * @param {{vals: number[], text: string[]}|null} [o.colTicks] custom column ticks (already escaped)
 * @param {number} [o.maxColTicks] at most this many column labels (every k-th when there are more)
 * @param {boolean} [o.colorbar]
 * @param {boolean} [o.showRowLabels]
 * @param {number|null} [o.width] fixed width in pixels (narrow vectors), else the container's
 * @param {{l?: number, r?: number, t?: number, b?: number}} [o.margin] overrides
 * @returns {{data: object[], layout: object}}
 */
export function matrixFigure({
  z,
  rowLabels = null,
  rowName = 'row',
  colLabels = null,
  colName = 'dim',
  colOffset = 0,
  rowOffset = 0,
  kind = 'signed',
  range = null,
  cellPx = 20,
  square = false,
  numbers = 'auto',
  highlights = [],
  slots = 0,
  colTicks = null,
  maxColTicks = 40,
  colorbar = true,
  showRowLabels = true,
  width = null,
  margin = {},
}) {
  const rows = z.length;
  const cols = rows ? z[0].length : 0;
  const x = Array.from({ length: cols }, (_, j) => colOffset + j);
  const y = Array.from({ length: rows }, (_, i) => i);
  const rowText = (i) => (rowLabels ? rowLabels[i] : String(rowOffset + i));
  const colText = (j) => (colLabels ? colLabels[j] : undefined);

  const hover = z.map((row, i) =>
    row.map((v, j) => {
      const where = `${describe(rowName, rowOffset + i, rowLabels ? rowLabels[i] : undefined)} · ${describe(colName, colOffset + j, colText(j))}`;
      return escapeForPlotly(`${where}: ${v === null ? '−∞ (hidden)' : formatValue(v)}`);
    }),
  );
  const writeNumbers = numbers === 'auto' ? rows <= NUMBERS_MAX && cols <= NUMBERS_MAX : Boolean(numbers);

  const signed = kind === 'signed';
  const m = range ?? (signed ? signedRange(z) : valueMax(z));
  const trace = {
    type: 'heatmap',
    z,
    x,
    y,
    customdata: hover,
    hovertemplate: '%{customdata}<extra></extra>',
    hoverongaps: true,
    colorscale: signed ? signedColorscale() : plotlyColorscale(),
    zmin: signed ? -m : 0,
    zmax: m,
    xgap: writeNumbers ? 1 : 0,
    ygap: writeNumbers ? 1 : 0,
    showscale: colorbar,
    colorbar: {
      thickness: 8,
      len: 1,
      lenmode: 'fraction',
      xpad: 4,
      outlinewidth: 0,
      tickformat: '.3~g',
      tickfont: { size: 10 },
    },
  };
  if (writeNumbers) {
    trace.text = z.map((row) => row.map((v) => formatCell(v)));
    trace.texttemplate = '%{text}';
    trace.textfont = { size: Math.max(9, Math.min(13, Math.round(cellPx / 3.4))), family: FONT };
  }

  const maxRowTicks = Math.max(2, Math.floor((rows * cellPx) / LABEL_PX));
  const rowTicks = keepTicks(tickIndices(rows, maxRowTicks), focusRows(highlights), Math.ceil(rows / maxRowTicks));
  const yaxis = {
    tickmode: 'array',
    tickvals: rowTicks,
    ticktext: rowTicks.map((i) => tickLabel(rowText(i))),
    showticklabels: showRowLabels,
    tickfont: { size: rows > 40 ? 10 : 11 },
    autorange: 'reversed', // the first row (query) at the top
    showgrid: false,
    zeroline: false,
    ticks: '',
    fixedrange: true,
  };
  const xaxis = {
    showgrid: false,
    zeroline: false,
    ticks: '',
    fixedrange: true,
    tickfont: { size: 10 },
    range: [colOffset - 0.5, colOffset + cols - 0.5],
  };
  let bottom = 24;
  if (colTicks) {
    Object.assign(xaxis, { tickmode: 'array', tickvals: colTicks.vals, ticktext: colTicks.text });
  } else if (colLabels) {
    const ticks = tickIndices(cols, maxColTicks);
    Object.assign(xaxis, {
      tickmode: 'array',
      tickvals: ticks.map((j) => colOffset + j),
      ticktext: ticks.map((j) => tickLabel(colLabels[j])),
      tickangle: -50,
      tickfont: { size: cols > 40 ? 10 : 11 },
    });
    const longest = Math.max(0, ...colLabels.map((label) => Math.min(labelWidth(label), MAX_LABEL_CHARS)));
    bottom = Math.round(12 + 6 * longest);
  } else if (cols <= NUMBERS_MAX) {
    Object.assign(xaxis, { tickmode: 'array', tickvals: x, ticktext: x.map(String) });
  } else {
    Object.assign(xaxis, { tickmode: 'auto', nticks: Math.min(12, cols), tickformat: 'd' });
  }
  if (square) {
    yaxis.scaleanchor = 'x';
    yaxis.scaleratio = 1;
    yaxis.constrain = 'domain';
    xaxis.constrain = 'domain';
  }

  const shapes = [];
  if (slots > 0) {
    for (let c = slots; c < cols; c += slots) {
      shapes.push({
        type: 'line',
        xref: 'x',
        yref: 'y',
        x0: colOffset + c - 0.5,
        x1: colOffset + c - 0.5,
        y0: -0.5,
        y1: rows - 0.5,
        line: { color: 'rgba(27, 35, 48, 0.45)', width: 1 },
      });
    }
  }
  for (const h of highlights) {
    shapes.push({
      type: 'rect',
      xref: 'x',
      yref: 'y',
      x0: colOffset + (h.col0 ?? 0) - 0.5,
      x1: colOffset + (h.col1 ?? cols - 1) + 0.5,
      y0: (h.row0 ?? 0) - 0.5,
      y1: (h.row1 ?? rows - 1) + 0.5,
      line: { color: HIGHLIGHT, width: 3 },
      fillcolor: 'rgba(0,0,0,0)',
    });
  }

  const t = margin.t ?? 6;
  const b = margin.b ?? bottom;
  const hasHidden = z.some((row) => row.some((v) => v === null));
  const layout = {
    font: { family: FONT, size: 12, color: '#1b2330' },
    height: Math.round(t + b + rows * cellPx),
    margin: {
      t,
      b,
      l: showRowLabels ? labelMargin(Array.from({ length: rows }, (_, i) => rowText(i))) : 6,
      r: colorbar ? 56 : 6,
      pad: 0,
      ...margin,
    },
    paper_bgcolor: '#ffffff',
    plot_bgcolor: hasHidden ? HIDDEN_GREY : '#ffffff', // hidden cells are gaps: they show this
    xaxis,
    yaxis,
    shapes,
    hoverlabel: { font: { family: FONT, size: 12 } },
  };
  if (width) {
    layout.width = width;
    layout.autosize = false;
  }
  return { data: [trace], layout };
}
