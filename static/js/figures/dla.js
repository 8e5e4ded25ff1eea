// Direct logit attribution (POST /api/v1/logit-attribution) as a Plotly figure, and the sentence under it. Pure: no
// DOM, no fetch; views/explorer-dla.js draws it. Two heatmaps share one diverging colour scale centred on 0: the
// heads (rows layers, 0 at the top; columns the query heads, grouped by the key-value head they share, with an empty
// column between two groups, as the explorer's grid groups them), and a strip beside them with each layer's MLP and
// (GPT-2) its attention output bias, under a first row that holds the embeddings and the final LayerNorm's bias.
// Every cell is one part of the residual stream at the position, through the final norm with its scale frozen,
// dotted with the answer's unembedding row: the parts add up to the model's own logit (or logit difference).
import { t } from '../i18n/index.js';
import { FONT, HIGHLIGHT, TEXT_COLOUR, labelMargin, tickLabel } from './axes.js';
import { plotlyDiverging } from './colormap.js';
import { escapeForPlotly } from './escape.js';
import { kvGroup, kvRuns } from './kv-groups.js';

export const TOP_PARTS = 3; // the caption names this many of the largest parts

/** A value as the caption and hover show it: three decimals, a sign always ("+1.234", "−0.500"). */
export function formatLogit(value) {
  const fixed = Math.abs(value).toFixed(3);
  return `${value < 0 && Number(fixed) !== 0 ? '−' : '+'}${fixed}`;
}

/**
 * Where each head's column sits: x[h] (an empty column between two key-value groups), the column count, and the
 * groups [{kv, x0, x1}] (x0..x1 the group's columns; [] without grouped-query attention).
 */
export function headColumns(nHeads, nKvHeads) {
  const heads = Array.from({ length: nHeads }, (_, h) => h);
  const runs = kvRuns(heads, nHeads, nKvHeads);
  if (!runs.length) return { x: heads, width: nHeads, groups: [] };
  const x = [];
  const groups = runs.map((run, g) => {
    const x0 = run.start + g; // one gap column before every group but the first
    for (let i = 0; i < run.count; i += 1) x.push(x0 + i);
    return { kv: run.kv, x0, x1: x0 + run.count - 1 };
  });
  return { x, width: nHeads + runs.length - 1, groups };
}

/** Every part of the answer: [{kind: 'head'|'mlp'|'bias'|'embeddings'|'norm_bias', layer?, head?, value}]. */
export function dlaParts(answer) {
  const parts = [{ kind: 'embeddings', value: answer.embeddings }];
  answer.heads.forEach((row, layer) => row.forEach((value, head) => parts.push({ kind: 'head', layer, head, value })));
  answer.mlp.forEach((value, layer) => parts.push({ kind: 'mlp', layer, value }));
  (answer.attention_bias || []).forEach((value, layer) => parts.push({ kind: 'bias', layer, value }));
  if (answer.norm_bias !== null && answer.norm_bias !== undefined) parts.push({ kind: 'norm_bias', value: answer.norm_bias });
  return parts;
}

/** A part's name in the page's language ("L1 H3", "MLP 2", "embeddings"). */
export function partLabel(part) {
  return t(`dla.part.${part.kind}`, { layer: part.layer, head: part.head });
}

/** The parts' sum (what is drawn), and the TOP_PARTS largest by size (ties: the earlier part first). */
export function dlaSummary(answer) {
  const parts = dlaParts(answer);
  const sum = parts.reduce((s, part) => s + part.value, 0);
  const top = parts.map((part, i) => ({ part, i }))
    .sort((a, b) => Math.abs(b.part.value) - Math.abs(a.part.value) || a.i - b.i)
    .slice(0, TOP_PARTS).map(({ part }) => part);
  return { sum, count: parts.length, top };
}

/**
 * The sentences under the figure: what is explained (answer tokens as data: shown as they are in any language),
 * the sum against the model's logit, and the largest parts. [{key, values, data}]
 */
export function dlaCaptionParts(answer, tokens = answer.tokens) {
  const { sum, count, top } = dlaSummary(answer);
  const at = tokens && tokens[answer.position] ? tokens[answer.position].display ?? tokens[answer.position].text : '';
  const lines = [];
  if (answer.answer.length === 2) {
    lines.push({ key: 'dla.explained.two', values: { good: answer.answer[0].display, bad: answer.answer[1].display,
      position: answer.position, token: at }, data: ['good', 'bad', 'token'] });
  } else {
    lines.push({ key: 'dla.explained.one', values: { answer: answer.answer[0].display, position: answer.position,
      token: at }, data: ['answer', 'token'] });
  }
  lines.push({ key: 'dla.sum', values: { count, sum: formatLogit(sum), logit: formatLogit(answer.logit),
    scale: answer.scale.toFixed(4), norm: t(`dla.norm.${answer.norm}`) }, data: [] });
  const items = top.map((part) => t('dla.topItem', { part: partLabel(part), value: formatLogit(part.value) }));
  lines.push({ key: 'dla.top', values: { parts: items.join(t('dla.listSeparator')) }, data: [] });
  if (answer.softcap !== null && answer.softcap !== undefined) {
    lines.push({ key: 'dla.capped', values: { cap: answer.softcap, capped: formatLogit(answer.capped) }, data: [] });
  }
  return lines;
}

/**
 * @param {{heads: number[][], mlp: number[], attention_bias: number[]|null, embeddings: number,
 *   norm_bias: number|null}} answer the /logit-attribution answer
 * @param {{nKvHeads?: number|null, layer?: number|null, head?: number|null, width?: number}} options the model's
 *   key-value heads (grouping), the explorer's selected head (outlined)
 */
export function dlaFigure(answer, { nKvHeads = null, layer = null, head = null, width = 600 } = {}) {
  const nLayers = answer.heads.length;
  const nHeads = nLayers ? answer.heads[0].length : 0;
  const columns = headColumns(nHeads, nKvHeads);
  const top = Math.max(1e-9, ...dlaParts(answer).map((part) => Math.abs(part.value)));
  const layerLabels = answer.heads.map((_, l) => t('dla.layerShort', { layer: l }));

  // the heads: (L, columns) with null in the gaps; customdata [layer, head] on a head's cell
  const z = answer.heads.map(() => Array(columns.width).fill(null));
  const custom = answer.heads.map(() => Array(columns.width).fill(null));
  const hover = answer.heads.map(() => Array(columns.width).fill(''));
  answer.heads.forEach((row, l) => row.forEach((value, h) => {
    const x = columns.x[h];
    z[l][x] = value;
    custom[l][x] = [l, h];
    const kv = columns.groups.length ? t('dla.hoverKv', { kv: kvGroup(h, nHeads, nKvHeads).kv }) : '';
    hover[l][x] = escapeForPlotly(t('dla.hover', { part: partLabel({ kind: 'head', layer: l, head: h }),
      value: formatLogit(value) }) + kv);
  }));

  // the strip: columns MLP (and the attention bias); row −1 the embeddings (and the final norm's bias)
  const bias = answer.attention_bias;
  const stripColumns = [t('dla.column.mlp'), ...(bias ? [t('dla.column.bias')] : [])];
  const stripRows = [-1, ...answer.heads.map((_, l) => l)];
  const cell = (part) => (part === null ? [null, ''] : [part.value, escapeForPlotly(t('dla.hover', {
    part: partLabel(part), value: formatLogit(part.value) }))]);
  const stripCells = stripRows.map((l) => (l < 0
    ? [cell({ kind: 'embeddings', value: answer.embeddings }),
      ...(bias ? [answer.norm_bias === null || answer.norm_bias === undefined ? cell(null)
        : cell({ kind: 'norm_bias', value: answer.norm_bias })] : [])]
    : [cell({ kind: 'mlp', layer: l, value: answer.mlp[l] }),
      ...(bias ? [cell({ kind: 'bias', layer: l, value: bias[l] })] : [])]));

  const shapes = [];
  if (layer !== null && head !== null && layer < nLayers && head < nHeads) {
    const x = columns.x[head];
    shapes.push({ type: 'rect', xref: 'x', yref: 'y', x0: x - 0.5, x1: x + 0.5, y0: layer - 0.5, y1: layer + 0.5,
      line: { color: HIGHLIGHT, width: 3 } });
  }
  const annotations = columns.groups.map((group) => ({
    xref: 'x', yref: 'paper', x: (group.x0 + group.x1) / 2, y: 1, yanchor: 'bottom', showarrow: false,
    text: escapeForPlotly(t('dla.kvGroup', { kv: group.kv })), font: { size: 11 },
  }));
  const step = Math.max(1, Math.ceil(nHeads / Math.max(3, Math.floor((width * 0.7) / 24))));
  const headTicks = columns.x.filter((_, h) => h % step === 0);
  const rowLabels = [t('dla.embeddingsShort'), ...layerLabels];
  const split = width < 500 ? 0.66 : 0.76;
  return {
    data: [{
      type: 'heatmap', name: 'heads', z, x: Array.from({ length: columns.width }, (_, i) => i),
      y: layerLabels.map((_, l) => l), coloraxis: 'coloraxis', text: hover, hoverinfo: 'text', customdata: custom,
      xgap: 1, ygap: 1, hoverongaps: false,
    }, {
      type: 'heatmap', name: 'strip', z: stripCells.map((row) => row.map(([v]) => v)),
      x: stripColumns.map((_, i) => i), y: stripRows, xaxis: 'x2', yaxis: 'y', coloraxis: 'coloraxis',
      text: stripCells.map((row) => row.map(([, h]) => h)), hoverinfo: 'text', xgap: 1, ygap: 1, hoverongaps: false,
    }],
    layout: {
      font: { family: FONT, color: TEXT_COLOUR, size: 12 },
      margin: { l: labelMargin(rowLabels), r: 10, t: columns.groups.length ? 28 : 10, b: 70 },
      height: Math.max(240, 90 + (nLayers + 1) * 28 + (columns.groups.length ? 18 : 0)),
      coloraxis: { cmin: -top, cmax: top, cmid: 0, colorscale: plotlyDiverging(),
        colorbar: { thickness: 10, len: 0.9, orientation: 'h', y: -0.22, yanchor: 'top',
          title: { text: escapeForPlotly(t('dla.colorbar')), side: 'top' } } },
      xaxis: { domain: [0, split], tickvals: headTicks,
        ticktext: headTicks.map((x) => tickLabel(t('dla.headShort', { head: columns.x.indexOf(x) }))),
        fixedrange: true, zeroline: false, showgrid: false, // the ticks say "H0", "H1", …: no axis title
        range: [-0.5, columns.width - 0.5] },
      xaxis2: { domain: [split + 0.04, 1], anchor: 'y', tickvals: stripColumns.map((_, i) => i),
        ticktext: stripColumns.map((label) => tickLabel(label)), fixedrange: true, zeroline: false, showgrid: false,
        range: [-0.5, stripColumns.length - 0.5] },
      yaxis: { tickvals: stripRows, ticktext: rowLabels.map(escapeForPlotly), fixedrange: true,
        zeroline: false, showgrid: false, range: [nLayers - 0.5, -1.5] },
      shapes,
      annotations,
      paper_bgcolor: 'rgba(0,0,0,0)', // ui-text: not UI (a colour)
      plot_bgcolor: 'rgba(0,0,0,0)', // ui-text: not UI (a colour)
    },
  };
}
