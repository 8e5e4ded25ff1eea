// Data -> Plotly figure for one matrix of an attention step: a heatmap with the
// token (or dimension) on each axis, optional highlight rectangles, thin lines
// between heads' column slots, and the numbers written in the cells when the
// matrix is small; and the small overview of a whole matrix that a window of it is cut from.
// Pure: no DOM, no fetch (the words come from the page's dictionary through t()).
import { t } from '../i18n/index.js';
import { FONT, HIGHLIGHT, MAX_LABEL_CHARS, TEXT_COLOUR, keepTicks, labelMargin, labelWidth, tickIndices, tickLabel } from './axes.js';
import { plotlyColorscale } from './colormap.js';
import { escapeForPlotly } from './escape.js';

export const HIDDEN_GREY = '#b9c0ca'; // masked (−∞) cells: Plotly leaves null cells empty, showing this
export const NUMBERS_MAX = 16; // numbers are written in the cells up to 16 × 16
// Room a tick label needs across its line: in Chromium the box of an 11 px label (Latin or CJK)
// is 13 px tall, of a 10 px label 12 px (measured with getBoundingClientRect). Column labels
// stand upright (−90°) when they do not fit across, so the same room applies to them.
const labelFont = (px) => (px >= 13 ? 11 : 10);
const labelRoom = (font) => (font === 11 ? 13 : 12);

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

const rangeCache = new WeakMap(); // matrix -> its signedRange: the trace's matrices are reused across steps

/**
 * Half-range m of a symmetric colour scale (−m…m) for signed matrices: the largest |value|,
 * or for large matrices the 99.5th percentile, so that one outlier dimension does not wash
 * out every other cell (hover still shows the real value).
 */
export function signedRange(...matrices) {
  const cached = matrices.length === 1 ? rangeCache.get(matrices[0]) : undefined;
  if (cached !== undefined) return cached;
  let count = 0;
  for (const matrix of matrices) for (const row of matrix) count += row.length;
  const values = new Float64Array(count);
  let n = 0;
  for (const matrix of matrices) {
    for (const row of matrix) for (const v of row) if (v !== null && Number.isFinite(v)) values[n++] = Math.abs(v);
  }
  let m = 1;
  if (n) {
    const sorted = values.subarray(0, n).sort(); // typed arrays sort numerically
    m = n <= 1024 ? sorted[n - 1] : sorted[Math.floor(0.995 * (n - 1))];
    if (!(m > 0)) m = 1;
  }
  if (matrices.length === 1) rangeCache.set(matrices[0], m);
  return m;
}

/** Largest entry (ignoring hidden ones); 1 when there is none above 0. */
export function valueMax(matrix) {
  let max = 0;
  for (const row of matrix) for (const v of row) if (v !== null && v > max) max = v;
  return max > 0 ? max : 1;
}

/** Rows (absolute indices) that a highlight outlines alone (the query's row): their labels are always drawn. */
function focusRows(highlights) {
  return highlights.filter((h) => h.row0 !== undefined && h.row0 === h.row1).map((h) => h.row0);
}

/** "query 3 “cat”", "dim 17", or just the label when there is no name (toy rows "q0"). */
function describe(name, index, label) {
  if (label === undefined || label === null) return `${name || '#'} ${index}`;
  return name ? `${name} ${index} “${label}”` : label;
}

/**
 * Which column labels to draw and how: across (0°) when every label fits its column, else
 * upright (−90°), every k-th when the columns are narrower than a label's line.
 * @returns {{ticks: number[], angle: number, bottom: number}} ticks are relative column indices
 */
function columnLabels(labels, colPx, maxTicks) {
  const longest = Math.max(0, ...labels.map((label) => Math.min(labelWidth(label), MAX_LABEL_CHARS)));
  const font = colPx ? labelFont(colPx) : 11;
  const across = colPx !== null && 6.5 * longest + 6 <= colPx;
  const room = across ? 6.5 * longest + 6 : labelRoom(font);
  const fit = colPx ? Math.max(1, Math.floor((labels.length * colPx) / room)) : maxTicks;
  return {
    ticks: tickIndices(labels.length, Math.min(maxTicks, fit)),
    angle: across ? 0 : -90,
    font,
    bottom: across ? 24 : Math.round(12 + 6.2 * longest),
  };
}

/**
 * @param {object} o
 * @param {(number|null)[][]} o.z rows × columns; null = hidden (drawn grey, written "−∞")
 * @param {string[]} [o.rowLabels] raw text of each row (tokens): escaped here
 * @param {string|null} [o.rowName] what a row is, for hover text ("query", "key", "token", "dim");
 *   null: the label says it ("q0")
 * @param {string[]|null} [o.colLabels] raw text of each column, or null for numbered columns
 * @param {string} [o.colName] what a column is ("key", "dim")
 * @param {number} [o.colOffset] the first column's index (a window or slice of a wider matrix)
 * @param {number} [o.rowOffset] the first row's index: rows sit at y = rowOffset + i
 * @param {'signed'|'weights'} [o.kind] diverging scale around 0, or Blues from 0
 * @param {number} [o.range] signed: half-range m (colours span −m…m); weights: the top of the scale
 * @param {number} [o.cellPx] height of one row in pixels
 * @param {number} [o.colPx] width of one column in pixels, when known (to fit the column labels)
 * @param {boolean} [o.square] square cells (N×N maps)
 * @param {boolean|'auto'} [o.numbers] write the values in the cells ('auto': when ≤ 16 × 16)
 * @param {Array<{row0?: number, row1?: number, col0?: number, col1?: number}>} [o.highlights]
 *   rectangles to outline, inclusive indices in the matrix's own numbering (rowOffset + i,
 *   colOffset + j); a missing end is the edge of what is drawn
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
  colPx = null,
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
  const y = Array.from({ length: rows }, (_, i) => rowOffset + i);
  const rowText = (i) => (rowLabels ? rowLabels[i] : String(rowOffset + i));
  const colText = (j) => (colLabels ? colLabels[j] : undefined);
  const hidden = t('walk.word.hidden');

  // Hover text "row · column: value", escaped part by part (escaping is per character, and a formatted
  // value has nothing to escape): one escape per row and column instead of one per cell.
  const rowsSaid = Array.from({ length: rows }, (_, i) => escapeForPlotly(`${describe(rowName, rowOffset + i, rowLabels ? rowLabels[i] : undefined)} · `));
  const colsSaid = Array.from({ length: cols }, (_, j) => escapeForPlotly(`${describe(colName, colOffset + j, colText(j))}: `));
  const hiddenSaid = escapeForPlotly(hidden);
  const hover = z.map((row, i) => {
    const said = rowsSaid[i];
    return row.map((v, j) => said + colsSaid[j] + (v === null ? hiddenSaid : formatValue(v)));
  });
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

  const rowFont = labelFont(cellPx);
  const maxRowTicks = Math.max(1, Math.floor((rows * cellPx) / labelRoom(rowFont)));
  const focus = focusRows(highlights).map((r) => r - rowOffset).filter((i) => i >= 0 && i < rows);
  const rowTicks = keepTicks(tickIndices(rows, maxRowTicks), focus, Math.ceil(rows / maxRowTicks));
  const yaxis = {
    tickmode: 'array',
    tickvals: rowTicks.map((i) => rowOffset + i),
    ticktext: rowTicks.map((i) => tickLabel(rowText(i))),
    showticklabels: showRowLabels,
    tickfont: { size: rowFont },
    autorange: 'reversed', // the first row (query) at the top
    ticklabeloverflow: 'allow', // the margins hold the labels: Plotly need not measure each one to hide it
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
    ticklabeloverflow: 'allow',
    tickfont: { size: 10 },
    range: [colOffset - 0.5, colOffset + cols - 0.5],
  };
  let bottom = 24;
  if (colTicks) {
    Object.assign(xaxis, { tickmode: 'array', tickvals: colTicks.vals, ticktext: colTicks.text });
  } else if (colLabels) {
    const labels = columnLabels(colLabels, colPx ?? (square ? cellPx : null), maxColTicks);
    Object.assign(xaxis, {
      tickmode: 'array',
      tickvals: labels.ticks.map((j) => colOffset + j),
      ticktext: labels.ticks.map((j) => tickLabel(colLabels[j])),
      tickangle: labels.angle,
      tickfont: { size: labels.font },
    });
    bottom = labels.bottom;
  } else if (colPx) {
    // numbered columns of a known width: as many numbers as fit side by side (upright, every k-th, when
    // they do not fit across), never Plotly's own choice, which lets narrow columns' numbers overlap
    const labels = columnLabels(x.map(String), colPx, Math.min(maxColTicks, cols));
    Object.assign(xaxis, {
      tickmode: 'array',
      tickvals: labels.ticks.map((j) => colOffset + j),
      ticktext: labels.ticks.map((j) => String(colOffset + j)),
      tickangle: labels.angle,
      tickfont: { size: labels.font },
    });
    bottom = labels.bottom;
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
    const first = Math.ceil(colOffset / slots) * slots;
    for (let c = first === colOffset ? first + slots : first; c < colOffset + cols; c += slots) {
      shapes.push({
        type: 'line',
        xref: 'x',
        yref: 'y',
        x0: c - 0.5,
        x1: c - 0.5,
        y0: rowOffset - 0.5,
        y1: rowOffset + rows - 0.5,
        line: { color: 'rgba(27, 35, 48, 0.45)', width: 1 },
      });
    }
  }
  for (const h of highlights) shapes.push(outline(h, { x0: colOffset, x1: colOffset + cols - 1, y0: rowOffset, y1: rowOffset + rows - 1 }));

  const top = margin.t ?? 6;
  const b = margin.b ?? bottom;
  const hasHidden = z.some((row) => row.some((v) => v === null));
  const layout = {
    font: { family: FONT, size: 12, color: TEXT_COLOUR },
    height: Math.round(top + b + rows * cellPx),
    margin: {
      t: top,
      b,
      l: showRowLabels ? labelMargin(rowTicks.map((i) => rowText(i))) : 6,
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

/** A rectangle around rows row0…row1 and columns col0…col1 (inclusive; missing: `extent`'s), orange unless the
 * highlight names its `colour`. */
function outline(h, extent, width = 3) {
  return {
    type: 'rect',
    xref: 'x',
    yref: 'y',
    x0: (h.col0 ?? extent.x0) - 0.5,
    x1: (h.col1 ?? extent.x1) + 0.5,
    y0: (h.row0 ?? extent.y0) - 0.5,
    y1: (h.row1 ?? extent.y1) + 0.5,
    line: { color: h.colour ?? HIGHLIGHT, width },
    fillcolor: 'rgba(0,0,0,0)',
  };
}

// ---- the overview of a whole matrix --------------------------------------------------

const OVERVIEW_CELLS = 128; // at most 128 × 128 pooled cells: finer than a thumbnail can show
const pooledCache = new WeakMap();

/**
 * `z` pooled into blocks of rows × cols, keeping in each block the value farthest from 0 (so a
 * strong weight or score stays visible in the thumbnail); a block of hidden cells stays hidden.
 */
export function poolMatrix(z, rowsPerCell, colsPerCell) {
  const rows = z.length;
  const cols = rows ? z[0].length : 0;
  const out = [];
  for (let r0 = 0; r0 < rows; r0 += rowsPerCell) {
    const line = [];
    for (let c0 = 0; c0 < cols; c0 += colsPerCell) {
      let best = null;
      for (let r = r0; r < Math.min(rows, r0 + rowsPerCell); r++) {
        const row = z[r];
        for (let c = c0; c < Math.min(cols, c0 + colsPerCell); c++) {
          const v = row[c];
          if (v !== null && (best === null || Math.abs(v) > Math.abs(best))) best = v;
        }
      }
      line.push(best);
    }
    out.push(line);
  }
  return out;
}

/** The q-quantile of a matrix's values (hidden ones left out); 1 when none is above 0. */
function quantile(z, q) {
  const values = Float64Array.from(z.flat().filter((v) => v !== null)).sort();
  const v = values.length ? values[Math.floor(q * (values.length - 1))] : 0;
  return v > 0 ? v : 1;
}

function pooled(z) {
  let entry = pooledCache.get(z);
  if (!entry) {
    const rows = z.length;
    const cols = rows ? z[0].length : 0;
    const dy = Math.max(1, Math.ceil(rows / OVERVIEW_CELLS));
    const dx = Math.max(1, Math.ceil(cols / OVERVIEW_CELLS));
    entry = { z: poolMatrix(z, dy, dx), dy, dx, rows, cols };
    pooledCache.set(z, entry);
  }
  return entry;
}

/**
 * A thumbnail of a whole matrix with the window drawn from it outlined: rows window.rows and
 * columns window.cols ({start, end}, end exclusive; null: every column) and the query's row marked.
 * Clicking it (views/window-nav.js) moves the window there.
 * @param {{z: (number|null)[][], kind?: 'signed'|'weights', range?: number|null,
 *   rows: {start: number, end: number}, cols?: {start: number, end: number}|null,
 *   query?: number|null, size?: number}} o
 */
export function overviewFigure({ z, kind = 'signed', range = null, rows, cols = null, query = null, size = 168 }) {
  const p = pooled(z);
  const signed = kind === 'signed';
  // Weights: up to the 95th percentile of the pooled cells, so that the few keys that take most
  // of the weight ([CLS], [SEP]) do not leave the rest of the thumbnail white.
  const m = signed ? (range ?? signedRange(z)) : quantile(p.z, 0.95);
  const aspect = p.cols / Math.max(1, p.rows);
  const width = aspect >= 1 ? size : Math.max(48, Math.round(size * aspect));
  const height = aspect >= 1 ? Math.max(48, Math.round(size / aspect)) : size;
  const extent = { x0: 0, x1: p.cols - 1, y0: 0, y1: p.rows - 1 };
  const shapes = [];
  if (query !== null) {
    shapes.push({
      type: 'line', xref: 'x', yref: 'y', x0: -0.5, x1: p.cols - 0.5, y0: query, y1: query,
      line: { color: HIGHLIGHT, width: 1 },
    });
  }
  shapes.push(outline({ row0: rows.start, row1: rows.end - 1, col0: cols ? cols.start : undefined, col1: cols ? cols.end - 1 : undefined }, extent, 2));
  return {
    data: [{
      type: 'heatmap',
      z: p.z,
      x0: (p.dx - 1) / 2,
      dx: p.dx,
      y0: (p.dy - 1) / 2,
      dy: p.dy,
      colorscale: signed ? signedColorscale() : plotlyColorscale(),
      zmin: signed ? -m : 0,
      zmax: m,
      showscale: false,
      hoverinfo: 'none',
    }],
    layout: {
      width,
      height,
      autosize: false,
      margin: { t: 2, r: 2, b: 2, l: 2, pad: 0 },
      paper_bgcolor: '#ffffff',
      plot_bgcolor: HIDDEN_GREY,
      xaxis: { range: [-0.5, p.cols - 0.5], visible: false, fixedrange: true },
      yaxis: { range: [p.rows - 0.5, -0.5], visible: false, fixedrange: true },
      shapes,
      dragmode: false,
    },
  };
}
