// The attribution of a continuation (POST /api/v1/attribution/continuation) as a Plotly heatmap: one row per
// continuation token (its log-probability), one column per token before it (the text's, then the continuation's),
// empty where a column comes at or after the row's own token; a diverging scale centred on 0. Pure: no DOM, no
// fetch; views/explorer-attribution.js draws it.
import { t } from '../i18n/index.js';
import { FONT, TEXT_COLOUR, labelMargin, tickLabel, tokenLabel } from './axes.js';
import { plotlyDiverging } from './colormap.js';
import { escapeForPlotly } from './escape.js';

/** The columns' labels: the text's tokens, then every continuation token but the last (raw: escape for Plotly). */
export function continuationColumns(answer) {
  return [...answer.tokens.map(tokenLabel), ...answer.continuation.slice(0, -1).map((c) => tokenLabel(c))];
}

/** The matrix (rows × columns) with null where a row has no number. */
export function continuationMatrix(answer) {
  const width = answer.tokens.length + Math.max(answer.continuation.length - 1, 0);
  return answer.rows.map((row) => Array.from({ length: width }, (_, i) => (i < row.scores.length ? row.scores[i] : null)));
}

/** The caption's numbers: rows whose completeness holds, and each such row's largest attribution by size. */
export function continuationSummary(answer) {
  const labels = continuationColumns(answer);
  const ok = answer.rows.filter((row) => row.completeness.ok);
  const strongest = ok.map((row) => {
    let best = 0;
    row.scores.forEach((v, i) => { if (Math.abs(v) > Math.abs(row.scores[best])) best = i; });
    return { token: tokenLabel(row.token), on: labels[best], index: best, value: row.scores[best] };
  });
  return { rows: answer.rows.length, ok: ok.length, strongest };
}

export function continuationFigure(answer, { width = 600 } = {}) {
  const z = continuationMatrix(answer);
  const columns = continuationColumns(answer);
  const rowLabels = answer.rows.map((row) => tokenLabel(row.token));
  const top = Math.max(1e-9, ...z.flat().filter(Number.isFinite).map(Math.abs));
  const hover = z.map((row, r) => row.map((v, c) => (v === null ? '' : escapeForPlotly(t('continuation.hover', {
    row: rowLabels[r], column: columns[c], value: v.toFixed(4) })))));
  const step = Math.max(1, Math.ceil(columns.length / Math.max(4, Math.floor(width / 22))));
  const tickvals = columns.map((_, i) => i).filter((i) => i % step === 0);
  return {
    data: [{ type: 'heatmap', z, x: columns.map((_, i) => i), y: rowLabels.map((_, i) => i), zmin: -top, zmax: top,
      zmid: 0, colorscale: plotlyDiverging(), text: hover, hoverinfo: 'text', hoverongaps: false, xgap: 1, ygap: 1,
      colorbar: { thickness: 10, len: 0.9, title: { text: escapeForPlotly(t('continuation.colorbar')), side: 'right' } } }],
    layout: {
      font: { family: FONT, color: TEXT_COLOUR, size: 12 },
      margin: { l: labelMargin(rowLabels), r: 10, t: 10, b: 80 },
      height: Math.max(200, 110 + rowLabels.length * 24),
      xaxis: { tickvals, ticktext: tickvals.map((i) => tickLabel(columns[i])), tickangle: -50, fixedrange: true,
        zeroline: false, showgrid: false },
      yaxis: { tickvals: rowLabels.map((_, i) => i), ticktext: rowLabels.map((l) => tickLabel(l)), autorange: 'reversed',
        fixedrange: true, zeroline: false, showgrid: false },
      paper_bgcolor: 'rgba(0,0,0,0)', // ui-text: not UI (a colour)
      plot_bgcolor: 'rgba(0,0,0,0)', // ui-text: not UI (a colour)
    },
  };
}
