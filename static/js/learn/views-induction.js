// Induction heads (chapter 10), measured on the served model without training anything: the learner's
// sentence written twice ("S S") through POST /api/v1/attention (every layer and head, two bytes a
// weight), and every head's previous-token, duplicate-token and induction score on it (learn/measures.js,
// the definitions of model/analysis/circuits.py), as three layer × head grids; a click on a cell (or the
// pickers) draws that head's map of the two copies, the second copy's start marked. The caption names the
// strongest head of each kind with its score, and says whether any head reaches the 0.6 the /induction
// lab asks of an induction head.
import { getAttentionCompact } from '../api.js';
import { attentionHeatmapFigure } from '../figures/heatmap.js';
import { matrixFigure } from '../figures/matrix.js';
import { t } from '../i18n/index.js';
import { loadModels, Lru, modelOf, range } from '../page.js';
import { fetchLayer } from '../views/explorer-data.js';
import { renderFigure } from '../views/plot.js';
import { choice, el, field, said } from './dom.js';
import { repeatScores, repeatedHalves, strongest } from './measures.js';

/** Tokens of one copy at most: S S stays small (6 layers × 12 heads × 98² weights at most for MiniLM). */
export const MAX_COPY = 48;
/** The score the /induction lab asks of an induction head (and of a previous-token head). */
export const INDUCTION_BAR = 0.6;
export const KINDS = Object.freeze(['previous', 'duplicate', 'induction']);

const answers = new Lru(4);
const score = (x) => x.toFixed(3); // three decimals, kept: 1.000 is a head that puts all its weight there

/**
 * The part of `text` to write twice: all of it when one copy has at most `limit` tokens, else its first
 * tokens up to a token followed by a space (so that the cut text reads back as the same tokens).
 */
function copyOf(text, tokens, limit) {
  const content = tokens.filter((token) => !token.special && token.end !== null);
  if (content.length <= limit) return { text, kept: content.length, cut: false };
  for (let k = limit; k >= 1; k -= 1) {
    const last = content[k - 1];
    if (content[k].start > last.end) return { text: text.slice(0, last.end), kept: k, cut: true };
  }
  return { text: text.slice(0, content[limit - 1].end), kept: limit, cut: true };
}

/** S S through the model: its tokens, maps, where the copies are and every head's scores; null if S S is not two equal halves. */
async function measure(text) {
  const answer = await answers.load(text, () => getAttentionCompact({ text: `${text} ${text}`, text_pair: null, model: null, layers: null }));
  const { header, maps } = answer;
  const halves = repeatedHalves(header.tokens);
  if (halves === null) return null;
  const n = header.shape[2];
  const scores = repeatScores((i, j, layer, head) => maps[layer][head][i * n + j], maps.length, maps[0].length, halves);
  return { tokens: header.tokens, layers: header.layers, heads: header.heads, maps, n, halves, scores };
}

export async function inductionView(root, state, ctx) {
  await loadModels();
  const model = modelOf(null);
  const single = await fetchLayer({ text: state.text, pair: null, model: null }, 0);
  const limit = Math.min(MAX_COPY, Math.floor((model.max_tokens - single.tokens.filter((x) => x.special).length) / 2));
  let copy = copyOf(state.text, single.tokens, limit);
  let found = await measure(copy.text);
  let example = false;
  if (found === null) { // the text does not read back as the same tokens twice: the notes' example does
    example = true;
    copy = { text: t('example.animal'), kept: null, cut: false };
    found = await measure(copy.text);
  }
  if (!ctx.current() || found === null) return;
  const { tokens, n, halves, scores, maps } = found;
  const best = Object.fromEntries(KINDS.map((kind) => [kind, strongest(scores[kind])]));
  const layer = state.layer === null ? best.induction.layer : Math.min(state.layer, model.n_layers - 1);
  const head = state.head === null ? best.induction.head : Math.min(state.head, model.n_heads - 1);

  const grids = el('div', { class: 'learn-grids' });
  const map = el('div', { id: 'learn-induction-map', class: 'learn-plot learn-map' });
  const headLine = said('p', 'learn.induction.headLine', {
    layer, head, previous: score(scores.previous[layer][head]), duplicate: score(scores.duplicate[layer][head]),
    induction: score(scores.induction[layer][head]),
  }, [], { id: 'learn-induction-head', class: 'learn-figure-title' });
  const pickers = el('div', { class: 'learn-controls' }, [
    field('learn-layer', 'learn.layer', choice('learn-layer', range(model.n_layers).map((i) => [i, String(i)]), layer, (v) => ctx.navigate({ layer: Number(v), head }))),
    field('learn-head', 'learn.head', choice('learn-head', range(model.n_heads).map((i) => [i, String(i)]), head, (v) => ctx.navigate({ layer, head: Number(v) }))),
  ]);
  const source = example ? said('p', 'learn.induction.example', {}, [], { class: 'hint', id: 'learn-induction-source' })
    : copy.cut ? said('p', 'learn.induction.cut', { kept: copy.kept, limit }, [], { class: 'hint', id: 'learn-induction-source' }) : null;
  root.replaceChildren(...[source, said('p', 'learn.induction.grids', {}, [], { class: 'hint' }), grids, pickers, headLine, map].filter(Boolean));
  const wide = root.clientWidth >= 640; // the numbers of 72 cells fit on a wide screen only
  for (const kind of KINDS) {
    const plot = el('div', { id: `learn-induction-${kind}`, class: 'learn-plot', dataset: { kind } });
    grids.append(el('figure', { class: 'learn-grid-panel' }, [el('figcaption', { text: t(`learn.induction.${kind}`) }), plot]));
    // eslint-disable-next-line no-await-in-loop
    await renderFigure(plot, matrixFigure({
      z: scores[kind], kind: 'weights', range: 1, rowLabels: range(model.n_layers).map((l) => t('learn.c7.layerRow', { layer: l })), rowName: null,
      colLabels: range(model.n_heads).map(String), colName: t('learn.head'), cellPx: 24, numbers: wide, colorbar: false,
      highlights: [{ row0: layer, row1: layer, col0: head, col1: head }], margin: { t: 6, r: 6 },
    }), { modeBar: false });
    plot.on?.('plotly_click', (event) => {
      const point = event.points && event.points[0];
      if (point) ctx.navigate({ layer: Number(point.y), head: Number(point.x) });
    });
    if (!ctx.current()) return;
  }
  const rows = Array.from({ length: n }, (_, i) => Array.from(maps[layer][head].subarray(i * n, (i + 1) * n)));
  const figure = attentionHeatmapFigure({ tokens, matrix: rows, layer, head, size: Math.min(600, Math.max(300, root.clientWidth)), boundary: halves.start + halves.half });
  figure.layout = { ...figure.layout, title: { text: '' } };
  await renderFigure(map, figure, { modeBar: false });
  if (!ctx.current()) return;
  ctx.tokens(tokens, model.id);
  const top = best.induction;
  const values = {
    n, second: halves.start + halves.half, half: halves.half, uniform: score(1 / n),
    pl: best.previous.layer, ph: best.previous.head, pv: score(best.previous.value),
    dl: best.duplicate.layer, dh: best.duplicate.head, dv: score(best.duplicate.value),
    il: top.layer, ih: top.head, iv: score(top.value), bar: INDUCTION_BAR, model: model.id,
  };
  const verdict = top.value >= INDUCTION_BAR ? 'found' : model.causal ? 'noneCausal' : 'none';
  ctx.caption(`learn.induction.caption.${verdict}`, values, ['model']);
  ctx.links({ layer, head });
}
