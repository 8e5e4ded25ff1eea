// Activation patching's grid (POST /api/v1/patch) as a Plotly heatmap, its caption and its axis labels. Pure: no
// DOM, no fetch; views/explorer-patch.js draws it. Rows are layers (0 at the top), columns heads or token positions;
// a cell is how much of the clean metric the patch restores (1 = all, 0 = nothing), on a diverging scale centred on
// 0 so that a patch that moves the metric the wrong way shows in the other colour.
import { t } from '../i18n/index.js';
import { FONT, HIGHLIGHT, labelMargin, TEXT_COLOUR, tickLabel, tokenLabel } from './axes.js';
import { plotlyDiverging } from './colormap.js';
import { escapeForPlotly } from './escape.js';

/** The cell that restores most: {layer, index, value} (the first of equal ones, row by row); null for no cells. */
export function bestCell(grid) {
  let best = null;
  grid.forEach((row, layer) => row.forEach((value, index) => {
    if (Number.isFinite(value) && (best === null || value > best.value)) best = { layer, index, value };
  }));
  return best;
}

/** A residual column's label: the clean token, and "→ corrupted" where the corrupted text has another one. */
export function positionLabel(answer, index) {
  const clean = tokenLabel(answer.clean_tokens[index]);
  const corrupted = tokenLabel(answer.corrupted_tokens[index]);
  return clean === corrupted ? clean : `${clean}→${corrupted}`;
}

/** The columns' labels: "H0".. for heads, the tokens for positions (raw text: escape before Plotly). */
export function columnLabels(answer) {
  const n = answer.grid.length ? answer.grid[0].length : 0;
  return Array.from({ length: n }, (_, i) => (answer.columns === 'head' ? t('patch.headShort', { head: i })
    : positionLabel(answer, i)));
}

/** The value as the caption and hover show it. */
export const formatRestored = (value) => value.toFixed(2);

/**
 * The caption: which cell restores most and how much, as an i18n key and its values; `token` is data (shown as
 * it is in any language).
 */
export function patchCaptionParts(answer) {
  const best = bestCell(answer.grid);
  const metric = t(`patch.metric.${answer.metric_name}`);
  if (best === null) return { key: 'patch.caption.empty', values: { metric }, data: [] };
  const values = { layer: best.layer, value: formatRestored(best.value), metric };
  if (answer.columns === 'head') return { key: 'patch.caption.heads', values: { ...values, head: best.index }, data: [] };
  return { key: 'patch.caption.residual', values: { ...values, position: best.index, token: positionLabel(answer, best.index) },
    data: ['token'] };
}

/**
 * @param {{grid: number[][], columns: 'head'|'position', rows: 'layer', metric_name: string,
 *   clean_tokens: object[], corrupted_tokens: object[]}} answer the /patch answer
 * @param {{layer?: number|null, head?: number|null, width?: number}} options the explorer's selected head (outlined
 *   on a heads grid)
 */
export function patchFigure(answer, { layer = null, head = null, width = 600 } = {}) {
  const grid = answer.grid;
  const nLayers = grid.length;
  const nColumns = nLayers ? grid[0].length : 0;
  const labels = columnLabels(answer);
  const rowLabels = grid.map((_, l) => t('patch.layerShort', { layer: l }));
  const top = Math.max(1, ...grid.flat().filter(Number.isFinite).map(Math.abs));
  const columnWord = t(answer.columns === 'head' ? 'patch.axis.head' : 'patch.axis.position');
  const hover = grid.map((row, l) => row.map((value, i) => escapeForPlotly(t('patch.hover', {
    layer: l, column: columnWord, label: labels[i], value: formatRestored(value),
  }))));
  const shapes = [];
  if (answer.columns === 'head' && layer !== null && head !== null && layer < nLayers && head < nColumns) {
    shapes.push({ type: 'rect', xref: 'x', yref: 'y', x0: head - 0.5, x1: head + 0.5, y0: layer - 0.5, y1: layer + 0.5,
      line: { color: HIGHLIGHT, width: 3 } });
  }
  const step = Math.max(1, Math.ceil(nColumns / Math.max(4, Math.floor(width / 22))));
  const tickvals = Array.from({ length: nColumns }, (_, i) => i).filter((i) => i % step === 0);
  return {
    data: [{
      type: 'heatmap', z: grid, x: Array.from({ length: nColumns }, (_, i) => i), y: rowLabels.map((_, l) => l),
      zmin: -top, zmax: top, zmid: 0, colorscale: plotlyDiverging(), text: hover, hoverinfo: 'text',
      customdata: grid.map((row, l) => row.map((_, i) => [l, i])), xgap: 1, ygap: 1,
      colorbar: { thickness: 10, len: 0.9, title: { text: escapeForPlotly(t('patch.colorbar')), side: 'right' } },
    }],
    layout: {
      font: { family: FONT, color: TEXT_COLOUR, size: 12 },
      margin: { l: labelMargin(rowLabels), r: 10, t: 10, b: answer.columns === 'head' ? 40 : 90 },
      height: Math.max(220, 60 + nLayers * 28 + (answer.columns === 'head' ? 40 : 90)),
      xaxis: { tickvals, ticktext: tickvals.map((i) => tickLabel(labels[i])), // tickLabel escapes
        tickangle: answer.columns === 'head' ? 0 : -50, title: { text: escapeForPlotly(columnWord) }, fixedrange: true,
        zeroline: false, showgrid: false },
      yaxis: { tickvals: rowLabels.map((_, l) => l), ticktext: rowLabels.map(escapeForPlotly), autorange: 'reversed',
        fixedrange: true, zeroline: false, showgrid: false }, // the rows say "L0", "L1", …: no axis title
      shapes,
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
