// The /corpus page's figures and captions, pure: each caption says what is drawn, from the numbers drawn
// (the API's answer), and the scatter of every head by two metrics is a {data, layout} for Plotly.
import { t } from '../i18n/index.js';
import { FONT, HIGHLIGHT, TEXT_COLOUR } from './axes.js';
import { headColour } from './colormap.js';
import { escapeForPlotly } from './escape.js';

/** A metric's value as the captions and cards show it: two decimals, or a dash where it is not defined. */
export function formatValue(value) {
  return value === null || value === undefined || !Number.isFinite(value) ? '—' : value.toFixed(2);
}

/** "L3 H7" */
export const headName = (layer, head) => t('corpus.headName', { layer, head });

/**
 * The caption of a head's top texts: how many, by what, from the first value to the last, as the string's key,
 * its values and the names of the values that are data (metric names, patterns: shown as they are in any language).
 * @param {{layer: number, head: number, by?: string, lowest?: boolean, query?: string|null, key?: string|null,
 *   results: Array<{value: number|null}>}} answer
 */
export function textsCaptionParts({ layer, head, by = null, lowest = false, query = null, key = null, results }) {
  const values = {
    head: headName(layer, head), count: results.length, metric: by, query, key,
    first: results.length ? formatValue(results[0].value) : '', last: results.length ? formatValue(results.at(-1).value) : '',
  };
  const kind = query !== null ? 'pattern' : lowest ? 'lowest' : 'highest';
  const size = results.length === 0 ? 'none' : results.length === 1 ? 'one' : 'many';
  return { key: `corpus.caption.${kind}.${size}`, values, data: ['metric', 'query', 'key'] };
}

/** textsCaptionParts as one string. */
export function textsCaption(answer) {
  const { key, values } = textsCaptionParts(answer);
  return t(key, values);
}

/**
 * The tokens of a snippet with their part in the strongest pairs: `query` (some pair starts there), `key`
 * (some pair ends there), `continued` (a word piece, "##…", drawn against the token before, without "##").
 * @param {string[]} tokens
 * @param {Array<{query: number, key: number}>} pairs
 */
export function snippetTokens(tokens, pairs) {
  const queries = new Set(pairs.map((p) => p.query));
  const keys = new Set(pairs.map((p) => p.key));
  return tokens.map((token, i) => {
    const continued = i > 0 && token.length > 2 && token.startsWith('##');
    return { text: continued ? token.slice(2) : token, continued, query: queries.has(i), key: keys.has(i) };
  });
}

/**
 * An SVG path for an arc from a query token to a key token, both given as {x, y}: the middle of the top edge of
 * each token's box, in the snippet's coordinates. The arc rises above the higher of the two by `lift`, more for
 * tokens further apart (at most `maxLift`); from a token to itself, a small loop above it.
 */
export function arcPath(from, to, { lift = 10, maxLift = 26 } = {}) {
  const round = (v) => Math.round(v * 10) / 10;
  if (Math.abs(from.x - to.x) < 0.5 && Math.abs(from.y - to.y) < 0.5) {
    const { x, y } = from;
    return `M ${round(x - 4)} ${round(y)} C ${round(x - 10)} ${round(y - 18)}, ${round(x + 10)} ${round(y - 18)}, ${round(x + 4)} ${round(y)}`;
  }
  const height = Math.min(maxLift, lift + Math.abs(to.x - from.x) / 12);
  const top = Math.min(from.y, to.y) - height;
  return `M ${round(from.x)} ${round(from.y)} C ${round(from.x)} ${round(top)}, ${round(to.x)} ${round(top)}, ${round(to.x)} ${round(to.y)}`;
}

/** A pair's stroke: heavier pairs are drawn wider and darker. */
export function arcStroke(weight) {
  const w = Math.min(Math.max(Number.isFinite(weight) ? weight : 0, 0), 1);
  return { width: Math.round((1 + 2.5 * w) * 10) / 10, opacity: Math.round((0.35 + 0.65 * w) * 100) / 100 };
}

/**
 * Every head by two metrics (GET /api/v1/corpus/heads), one trace per layer in its colour, and the chosen head
 * ringed. Each point's customdata is [layer, head]; a click on it chooses that head.
 * @param {{x: string, y: string, points: Array<{layer: number, head: number, x: number|null, y: number|null}>}} answer
 * @param {{layer: number, head: number}} chosen
 */
export function headsFigure({ x, y, points }, chosen) {
  const layers = [...new Set(points.map((p) => p.layer))].sort((a, b) => a - b);
  const hover = `%{text}<br>${escapeForPlotly(x)}: %{x:.3f}<br>${escapeForPlotly(y)}: %{y:.3f}<extra></extra>`;
  const data = layers.map((layer) => {
    const own = points.filter((p) => p.layer === layer);
    return {
      type: 'scatter', mode: 'markers', name: t('corpus.layerName', { layer }),
      x: own.map((p) => p.x), y: own.map((p) => p.y), customdata: own.map((p) => [p.layer, p.head]),
      text: own.map((p) => headName(p.layer, p.head)), hovertemplate: hover,
      marker: { size: 9, color: headColour(layer), line: { width: 0.5, color: '#ffffff' } },
    };
  });
  const mark = points.find((p) => p.layer === chosen.layer && p.head === chosen.head);
  if (mark) {
    data.push({
      type: 'scatter', mode: 'markers', name: headName(mark.layer, mark.head), showlegend: false,
      x: [mark.x], y: [mark.y], customdata: [[mark.layer, mark.head]], text: [headName(mark.layer, mark.head)],
      hovertemplate: hover, marker: { size: 17, color: 'rgba(0,0,0,0)', line: { width: 2.5, color: HIGHLIGHT } },
    });
  }
  return {
    data,
    layout: {
      font: { family: FONT, color: TEXT_COLOUR, size: 12 },
      height: 380,
      margin: { t: 10, r: 10, b: 48, l: 56 },
      paper_bgcolor: 'rgba(0,0,0,0)',
      plot_bgcolor: '#ffffff',
      hovermode: 'closest',
      legend: { orientation: 'h', y: -0.2, font: { size: 11 } },
      xaxis: { title: { text: escapeForPlotly(x), standoff: 4 }, zeroline: false, gridcolor: '#eef1f5' },
      yaxis: { title: { text: escapeForPlotly(y), standoff: 4 }, zeroline: false, gridcolor: '#eef1f5' },
    },
  };
}

/**
 * The scatter's caption: how many heads, by which means, over how many texts, and where the chosen head is; as
 * textsCaptionParts, the key, the values and the names of those that are data.
 * @param {{x: string, y: string, points: Array<{layer: number, head: number, x: number|null, y: number|null}>}} answer
 * @param {{layer: number, head: number}} chosen
 * @param {{model: string, texts: number}} info
 */
export function headsCaptionParts({ x, y, points }, chosen, info) {
  const mark = points.find((p) => p.layer === chosen.layer && p.head === chosen.head);
  return {
    key: 'corpus.heads.caption',
    values: {
      count: points.length, model: info.model, texts: info.texts, x, y, head: headName(chosen.layer, chosen.head),
      xValue: formatValue(mark ? mark.x : null), yValue: formatValue(mark ? mark.y : null),
    },
    data: ['model', 'x', 'y'],
  };
}

/** headsCaptionParts as one string. */
export function headsCaption(answer, chosen, info) {
  const { key, values } = headsCaptionParts(answer, chosen, info);
  return t(key, values);
}
