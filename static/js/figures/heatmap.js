// Data -> Plotly figure for the explorer's large map: one head's attention weights, a layer's mean
// over heads or rollout, contribution norms, or a difference (edited − unedited) on a diverging
// scale. Pure: no DOM, no fetch (the words come from the page's dictionary through t()).
import { t } from '../i18n/index.js';
import { FONT, HIGHLIGHT, MARKED, keepTicks, mapColorbar, squareAxes, TEXT_COLOUR, tickIndices, tokenLabel } from './axes.js';
import { matrixAbsMax, plotlyColorscale, plotlyDiverging, scaleTop } from './colormap.js';
import { escapeForPlotly } from './escape.js';

const LABEL_PX = 13; // vertical room one tick label of the large map needs
const AXIS_ROOM = 140;
const MIN_OUTLINED_PX = 6; // a marked row thinner than this is ticked at the left edge, not outlined // pixels of the figure's width that are not the map (labels, colour bar)
const BOUNDARY = '#1b2330'; // the line between segment A and segment B

/** The sequential colour scale with a gamma: a value v (of the scale's maximum) gets the colour at v^gamma. */
export const sequentialColorscale = (gamma = 1) => plotlyColorscale({ gamma });

/** The diverging scale for differences: symmetric around 0 (white). */
export const divergingColorscale = () => plotlyDiverging();

/**
 * Which indices of [first, last] get a tick label for an axis `pixels` long: all of them when they
 * fit, every k-th otherwise; `keep` (the query, the focused token) is always labelled.
 */
export function ticksInRange(n, first, last, pixels, keep = []) {
  const lo = Math.max(0, Math.ceil(first));
  const hi = Math.min(n - 1, Math.floor(last));
  if (hi < lo) return [];
  const count = hi - lo + 1;
  const maxTicks = Math.max(8, Math.floor(pixels / LABEL_PX));
  const step = Math.max(1, Math.ceil(count / maxTicks));
  const every = tickIndices(count, Math.ceil(count / step)).map((i) => i + lo);
  return keepTicks(every, keep.filter((k) => k >= lo && k <= hi), step);
}

/**
 * The tick values and labels of one axis for the tokens in [first, last] (ticksInRange). When some token
 * of the input goes unlabelled (thinned out, or out of view when zoomed in), each label starts with its
 * token's position ("37 animal"), so that a thinned or zoomed axis says where it is; when every token is
 * labelled the labels are the tokens alone.
 * @param {string[]} labels every token's label, escaped for Plotly
 * @returns {{tickvals: number[], ticktext: string[]}}
 */
export function axisTicks(labels, first, last, pixels, keep = []) {
  const tickvals = ticksInRange(labels.length, first, last, pixels, keep);
  const every = tickvals.length === labels.length;
  return { tickvals, ticktext: tickvals.map((i) => (every ? labels[i] : `${i} ${labels[i]}`)) };
}

function kindTitle({ kind, layer, head }) {
  if (kind === 'mean') return t('explorer.kind.titleMean', { layer });
  if (kind === 'rollout') return t('explorer.kind.titleRollout', { layer });
  if (kind === 'contribution') return t('explorer.kind.titleContribution', { layer, head });
  return t('figure.layerHead', { layer, head });
}

/**
 * @param {{tokens: Array<{text: string, display?: string, unknown?: boolean, segment?: number}>,
 *          matrix: number[][], layer: number, head: number, query?: number|null, size?: number,
 *          kind?: 'weight'|'mean'|'rollout'|'contribution', diff?: boolean, edited?: boolean,
 *          zmax?: number|null, gamma?: number, focus?: number|null, boundary?: number|null,
 *          notes?: string[]}} input matrix is (query, key), as the API sends it; `query` is
 *   outlined (its row always labelled); size is the figure's width in pixels, used to thin out tick
 *   labels that would overlap; `zmax` a scale shared with other maps (null: this map's scaleTop, its maximum or a causal map's
 *   maximum from a quarter of the rows down);
 *   `focus` a token whose row and column are highlighted; `boundary` the index of segment B's first
 *   token (a line is drawn before it); `notes` sentences shown under the title (e.g. rows renormalised);
 *   `marked` rows outlined in MARKED, or ticked at the left edge when rows are thin (a ProbSparse edit's active
 *   queries)
 * @returns {{data: object[], layout: object, labels: string[]}}
 */
export function attentionHeatmapFigure({
  tokens, matrix, layer, head, query = null, size = 560, kind = 'weight', diff = false, edited = false,
  zmax = null, gamma = 1, focus = null, boundary = null, notes = [], marked = [],
}) {
  const n = tokens.length;
  const labels = tokens.map((token) => escapeForPlotly(tokenLabel(token)));
  const index = labels.map((_, i) => i);
  const hover = labels.map((q) => labels.map((key) => `${q} → ${key}`));
  const keep = [query, focus].filter((i) => i !== null && i < n);
  const { tickvals: ticks, ticktext } = axisTicks(labels, 0, n - 1, size - AXIS_ROOM, keep);
  const tickFontSize = n <= 24 ? 12 : n <= 40 ? 11 : 10;
  const top = diff ? (matrixAbsMax(matrix) || 1) : (zmax || scaleTop(matrix) || 1); // causal: colormap.js scaleTop

  const shapes = [];
  // outlines only: a tint would change the colours of the very cells the outline points at
  const line = (x0, x1, y0, y1, colour, width, dash = 'solid') => shapes.push({
    type: 'rect', xref: 'x', yref: 'y', x0, x1, y0, y1, line: { color: colour, width, dash }, fillcolor: 'rgba(0,0,0,0)',
  });
  // marked rows outlined while a row is tall enough to show its colours inside the outline; thinner rows get a
  // tick at the map's left edge instead (at 512 tokens, outlines would paint over every marked row)
  const rowPx = (size - AXIS_ROOM) / n;
  for (const row of marked.filter((r) => r < n)) {
    if (rowPx >= MIN_OUTLINED_PX) line(-0.5, n - 0.5, row - 0.5, row + 0.5, MARKED, 1.5);
    else shapes.push({ type: 'line', xref: 'x', yref: 'y', x0: -0.5, x1: -0.5 + Math.max(1, n / 40), y0: row, y1: row, line: { color: MARKED, width: 2 } });
  }
  if (query !== null && query < n) line(-0.5, n - 0.5, query - 0.5, query + 0.5, HIGHLIGHT, 2);
  if (focus !== null && focus < n) {
    line(-0.5, n - 0.5, focus - 0.5, focus + 0.5, HIGHLIGHT, 1.5, 'dot');
    line(focus - 0.5, focus + 0.5, -0.5, n - 0.5, HIGHLIGHT, 1.5, 'dot');
  }
  if (boundary !== null && boundary > 0 && boundary < n) {
    const at = boundary - 0.5;
    for (const [x0, x1, y0, y1] of [[at, at, -0.5, n - 0.5], [-0.5, n - 0.5, at, at]]) {
      // a dark line under a white dashed one: visible on every colour of both scales
      shapes.push({ type: 'line', xref: 'x', yref: 'y', x0, x1, y0, y1, line: { color: BOUNDARY, width: 3 }, name: 'segment-boundary' });
      shapes.push({ type: 'line', xref: 'x', yref: 'y', x0, x1, y0, y1, line: { color: '#ffffff', width: 1.5, dash: 'dash' } });
    }
  }

  let title = kindTitle({ kind, layer, head });
  if (edited) title = t(diff ? 'explorer.edit.titleDiff' : 'explorer.edit.titleEdited', { title });
  const subtitle = notes.filter(Boolean).map((note) => escapeForPlotly(note)).join('<br>');

  return {
    labels,
    data: [
      {
        type: 'heatmap',
        z: matrix,
        x: index,
        y: index,
        text: hover,
        hovertemplate: diff ? '%{text}: %{z:+.4f}<extra></extra>' : '%{text}: %{z:.4f}<extra></extra>',
        colorscale: diff ? divergingColorscale() : sequentialColorscale(gamma),
        zmin: diff ? -top : 0,
        zmax: top,
        colorbar: mapColorbar(diff ? -top : 0, top),
      },
    ],
    layout: {
      title: {
        text: escapeForPlotly(title),
        x: 0.5,
        xanchor: 'center',
        font: { size: 16 },
      },
      font: { family: FONT, size: 12, color: TEXT_COLOUR },
      margin: { t: subtitle ? 44 + 16 * notes.length : 44, r: 10, b: 10, l: 10 },
      paper_bgcolor: '#ffffff',
      plot_bgcolor: '#ffffff',
      ...squareAxes({ tickvals: ticks, ticktext, x: t('figure.key'), y: t('figure.query'), fontSize: tickFontSize }),
      hoverlabel: { font: { family: FONT, size: 13 } },
      annotations: subtitle ? [{
        text: subtitle, xref: 'paper', yref: 'paper', x: 0.5, y: 1, yanchor: 'bottom', yshift: 4,
        showarrow: false, font: { size: 12, color: '#5b6472' },
      }] : [],
      shapes,
    },
  };
}
