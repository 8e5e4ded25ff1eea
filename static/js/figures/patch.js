// Activation patching's grid (POST /api/v1/patch) as a Plotly heatmap, its caption and its axis labels. Pure: no
// DOM, no fetch; views/explorer-patch.js draws it. Rows are layers (0 at the top), columns heads or token positions;
// a cell is how much of the clean metric the patch restores (1 = all, 0 = nothing), on a diverging scale centred on
// 0 so that a patch that moves the metric the wrong way shows in the other colour. When the gap was too small to
// divide by (answer.normalised false) the cells are the raw metric after each patch, centred on the corrupted one.
// A head and position grid ([layer][head][position]) is drawn as layers × heads at one chosen position, or at each
// cell's best position, so it stays readable at any length. Heads are grouped by the key-value head they share
// (grouped-query attention): an empty column with a line between groups and a "KV g" label above each.
import { t } from '../i18n/index.js';
import { FONT, HIGHLIGHT, labelMargin, TEXT_COLOUR, tickLabel, tokenLabel } from './axes.js';
import { plotlyDiverging } from './colormap.js';
import { escapeForPlotly } from './escape.js';
import { kvRuns } from './kv-groups.js';

/** Whether the answer's cells are shares of the gap (`grid`); false: the gap was too small and only the raw metric
 * after each patch (`patched`) came. */
export function isNormalised(answer) {
  return answer.normalised !== false && Array.isArray(answer.grid);
}

/** How far a cell's value moves the metric toward the clean text's: the share itself, or for raw metrics the
 * change from the corrupted metric in the direction of the gap. */
function towardClean(answer) {
  if (isNormalised(answer)) return (value) => value;
  const { clean, corrupted } = answer.metric;
  const sign = clean >= corrupted ? 1 : -1;
  return (value) => (value - corrupted) * sign;
}

/** The cell that restores most: {layer, index, value} (the first of equal ones, row by row); null for no cells.
 * `key` ranks the values (the value itself by default). */
export function bestCell(grid, key = (value) => value) {
  let best = null;
  grid.forEach((row, layer) => row.forEach((value, index) => {
    if (Number.isFinite(value) && (best === null || key(value) > key(best.value))) best = { layer, index, value };
  }));
  return best;
}

/**
 * The two-dimensional grid drawn: the answer's own for every target but head_position, whose [layer][head][position]
 * cells are shown as [layer][head] at one `position`, or (position null) at each cell's best position (the one that
 * moves the metric most toward the clean text's; `positions` holds it).
 * @returns {{values: number[][], columns: 'head'|'position', positions: number[][]|null, position: number|null}}
 */
export function patchView(answer, position = null) {
  const cells = isNormalised(answer) ? answer.grid : answer.patched;
  if (answer.target !== 'head_position') return { values: cells, columns: answer.columns, positions: null, position: null };
  if (position !== null) {
    return { values: cells.map((row) => row.map((byPosition) => byPosition[position])), columns: 'head', positions: null,
      position };
  }
  const key = towardClean(answer);
  const positions = cells.map((row) => row.map((byPosition) => byPosition.reduce(
    (best, value, p) => (key(value) > key(byPosition[best]) ? p : best), 0)));
  return { values: cells.map((row, l) => row.map((byPosition, h) => byPosition[positions[l][h]])), columns: 'head',
    positions, position: null };
}

/** A residual column's label: the clean token, and "→ corrupted" where the corrupted text has another one. */
export function positionLabel(answer, index) {
  const clean = tokenLabel(answer.clean_tokens[index]);
  const corrupted = tokenLabel(answer.corrupted_tokens[index]);
  return clean === corrupted ? clean : `${clean}→${corrupted}`;
}

/** The columns' labels: "H0".. for heads, the tokens for positions (raw text: escape before Plotly). */
export function columnLabels(answer, view = patchView(answer)) {
  const n = view.values.length ? view.values[0].length : 0;
  return Array.from({ length: n }, (_, i) => (view.columns === 'head' ? t('patch.headShort', { head: i })
    : positionLabel(answer, i)));
}

/**
 * The heads in the order drawn, grouped by key-value head as the explorer's main grid is: [{head}|{gap}], one
 * empty column between two groups under grouped-query attention (none for multi-head attention), and the groups'
 * runs [{kv, start, count}] (start: a column index).
 */
export function headColumns(nHeads, nKvHeads) {
  const heads = Array.from({ length: nHeads }, (_, h) => h);
  const runs = kvRuns(heads, nHeads, nKvHeads);
  if (!runs.length) return { columns: heads.map((head) => ({ head })), groups: [] };
  const columns = [];
  const groups = runs.map((run, i) => {
    if (i > 0) columns.push({ gap: true });
    const start = columns.length;
    for (let k = 0; k < run.count; k += 1) columns.push({ head: heads[run.start + k] });
    return { kv: run.kv, start, count: run.count };
  });
  return { columns, groups };
}

/** The value as the caption and hover show it. */
export const formatRestored = (value) => value.toFixed(2);

/** A raw metric as the caption, hover and note show it. */
export const formatMetric = (value) => value.toFixed(4);

/**
 * The caption: which cell restores most and how much, as an i18n key and its values; `token` is data (shown as
 * it is in any language). For head_position it names the best (layer, head, position) of the view: over every
 * position (position null), or at the chosen one. Without normalisation (a tiny gap) it names the cell that moves
 * the raw metric most toward the clean text's, and the metric there.
 */
export function patchCaptionParts(answer, position = null) {
  const view = patchView(answer, position);
  const normalised = isNormalised(answer);
  const best = bestCell(view.values, towardClean(answer));
  const metric = t(`patch.metric.${answer.metric_name}`);
  if (best === null) return { key: 'patch.caption.empty', values: { metric }, data: [] };
  const values = { layer: best.layer, value: normalised ? formatRestored(best.value) : formatMetric(best.value), metric };
  const suffix = normalised ? '' : 'Raw'; // ui-text: not UI (the suffix of an i18n key)
  if (answer.target === 'residual' || answer.target === 'mlp') {
    return { key: `patch.caption.${answer.target}${suffix}`,
      values: { ...values, position: best.index, token: positionLabel(answer, best.index) }, data: ['token'] };
  }
  if (answer.target === 'head_position') {
    const at = position !== null ? position : view.positions[best.layer][best.index];
    return { key: `patch.caption.head_position${suffix}`,
      values: { ...values, head: best.index, position: at, token: positionLabel(answer, at) }, data: ['token'] };
  }
  const key = answer.target === 'pattern' ? 'pattern' : 'heads';
  return { key: `patch.caption.${key}${suffix}`, values: { ...values, head: best.index }, data: [] };
}

/**
 * The note under a grid that is not normalised: why the cells are the raw metric, and the gap.
 * null when the grid is normalised.
 */
export function rawNoteParts(answer) {
  if (isNormalised(answer)) return null;
  return { key: 'patch.rawNote', values: {
    metric: t(`patch.metric.${answer.metric_name}`), gap: formatMetric(Math.abs(answer.gap)),
    minGap: formatMetric(answer.min_gap),
  } };
}

/**
 * @param {{grid: number[][]|null, patched: number[][], target: string, columns: 'head'|'position', rows: 'layer',
 *   metric_name: string, metric: {clean: number, corrupted: number}, n_heads?: number, n_kv_heads?: number,
 *   normalised?: boolean, clean_tokens: object[], corrupted_tokens: object[]}} answer the /patch answer
 * @param {{layer?: number|null, head?: number|null, width?: number, position?: number|null}} options the
 *   explorer's selected head (outlined on a heads grid); `position`: head_position's chosen position (null: each
 *   cell's best)
 */
export function patchFigure(answer, { layer = null, head = null, width = 600, position = null } = {}) {
  const view = patchView(answer, position);
  const values = view.values;
  const normalised = isNormalised(answer);
  const nLayers = values.length;
  const nColumns = nLayers ? values[0].length : 0;
  const labels = columnLabels(answer, view);
  const byHead = view.columns === 'head';
  const { columns, groups } = byHead ? headColumns(nColumns, answer.n_kv_heads ?? nColumns)
    : { columns: labels.map((_, i) => ({ head: i })), groups: [] };
  const xs = columns.map((_, i) => i);
  const z = values.map((row) => columns.map((c) => (c.gap ? null : row[c.head])));
  const rowLabels = values.map((_, l) => t('patch.layerShort', { layer: l }));
  const finite = values.flat().filter(Number.isFinite);
  const mid = normalised ? 0 : answer.metric.corrupted;
  const top = normalised ? Math.max(1, ...finite.map(Math.abs))
    : Math.max(Math.abs(answer.metric.clean - mid), ...finite.map((v) => Math.abs(v - mid)), 1e-6);
  const columnWord = t(byHead ? 'patch.axis.head' : 'patch.axis.position');
  const hoverKey = normalised ? 'patch.hover' : 'patch.hoverRaw';
  const text = values.map((row, l) => columns.map((c) => {
    if (c.gap) return '';
    const value = row[c.head];
    const shown = normalised ? formatRestored(value) : formatMetric(value);
    const where = view.positions ? t('patch.hoverAt', { position: view.positions[l][c.head],
      token: positionLabel(answer, view.positions[l][c.head]) }) : '';
    return escapeForPlotly(t(hoverKey, { layer: l, column: columnWord, label: labels[c.head], value: shown }) + where);
  }));
  const shapes = [];
  const columnOf = (h) => columns.findIndex((c) => c.head === h);
  if (byHead && layer !== null && head !== null && layer < nLayers && head < nColumns) {
    const x = columnOf(head);
    shapes.push({ type: 'rect', xref: 'x', yref: 'y', x0: x - 0.5, x1: x + 0.5, y0: layer - 0.5, y1: layer + 0.5,
      line: { color: HIGHLIGHT, width: 3 } });
  }
  columns.forEach((c, i) => {
    if (c.gap) {
      shapes.push({ type: 'line', xref: 'x', yref: 'paper', x0: i, x1: i, y0: 0, y1: 1,
        line: { color: TEXT_COLOUR, width: 1.5 } });
    }
  });
  const annotations = groups.map((g) => ({ xref: 'x', yref: 'paper', x: g.start + (g.count - 1) / 2, y: 1,
    yanchor: 'bottom', showarrow: false, text: escapeForPlotly(t('patch.kvGroup', { kv: g.kv })),
    font: { size: 11, color: TEXT_COLOUR } }));
  const step = Math.max(1, Math.ceil(nColumns / Math.max(4, Math.floor(width / 22))));
  const tickvals = xs.filter((i) => !columns[i].gap && columns[i].head % step === 0);
  const bottom = byHead ? 40 : 90;
  const topMargin = groups.length ? 26 : 10;
  return {
    data: [{
      type: 'heatmap', z, x: xs, y: rowLabels.map((_, l) => l),
      zmin: mid - top, zmax: mid + top, zmid: mid, colorscale: plotlyDiverging(), text, hoverinfo: 'text',
      customdata: values.map((_, l) => columns.map((c) => (c.gap ? null : [l, c.head]))), xgap: 1, ygap: 1,
      hoverongaps: false,
      colorbar: { thickness: 10, len: 0.9, title: { text: escapeForPlotly(t(normalised ? 'patch.colorbar'
        : 'patch.colorbarRaw')), side: 'right' } },
    }],
    layout: {
      font: { family: FONT, color: TEXT_COLOUR, size: 12 },
      margin: { l: labelMargin(rowLabels), r: 10, t: topMargin, b: bottom },
      height: Math.max(220, 60 + nLayers * 28 + bottom + topMargin),
      xaxis: { tickvals, ticktext: tickvals.map((i) => tickLabel(labels[columns[i].head])), // tickLabel escapes
        tickangle: byHead ? 0 : -50, title: { text: escapeForPlotly(columnWord) }, fixedrange: true,
        zeroline: false, showgrid: false },
      yaxis: { tickvals: rowLabels.map((_, l) => l), ticktext: rowLabels.map(escapeForPlotly), autorange: 'reversed',
        fixedrange: true, zeroline: false, showgrid: false }, // the rows say "L0", "L1", …: no axis title
      shapes,
      annotations,
      paper_bgcolor: 'rgba(0,0,0,0)', // ui-text: not UI (a colour)
      plot_bgcolor: 'rgba(0,0,0,0)', // ui-text: not UI (a colour)
    },
  };
}

/**
 * A corrupted text to start from, with the same token count as `text` in WordPiece and byte-level BPE tokenizers:
 * the second word's letters become those of the last word that differs from it (its leading space and punctuation
 * kept), so one word changes into another that the text already spells the same way: "The cat sat on the mat." →
 * "The mat sat on the mat.". The text itself when no such word exists.
 */
export function suggestCorrupted(text) {
  const parts = text.split(/(\s+)/); // words at even indices, the spaces between at odd ones
  const words = parts.map((part, i) => (i % 2 === 0 ? /^(\p{L}+)(.*)$/su.exec(part) : null));
  const first = words.findIndex((w, i) => w && i > 0);
  if (first < 0) return text;
  for (let i = words.length - 1; i > first; i -= 1) {
    const w = words[i];
    if (w && w[1].toLowerCase() !== words[first][1].toLowerCase()) {
      const out = [...parts];
      out[first] = w[1] + words[first][2];
      return out.join('');
    }
  }
  return text;
}
