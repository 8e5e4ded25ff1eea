// The chapters that look at the real model (MiniLM) on the learner's sentence: one head's lookup
// (query, key, value), every head of a layer (many heads), and which heads park their attention on [CLS]
// and [SEP], with the notes' 'it → animal' example (a real model). Each tells the page the tokens the
// model read (ctx.tokens: the note on tokens it cannot read, and the tips that name a token). Data come
// from the explorer's own downloads (views/explorer-data.js), figures from figures/*.
import { tokenLabel } from '../figures/axes.js';
import { barsFigure } from '../figures/bars.js';
import { attentionHeatmapFigure } from '../figures/heatmap.js';
import { matrixFigure } from '../figures/matrix.js';
import { t } from '../i18n/index.js';
import { loadModels, modelOf, range } from '../page.js';
import { fetchContribution, fetchLayer, fetchMetrics, headRows } from '../views/explorer-data.js';
import { renderFigure } from '../views/plot.js';
import { fillChip } from '../views/tokens.js';
import { choice, el, field, fixed, percent, said } from './dom.js';

const sentence = (state) => ({ text: state.text, pair: null, model: null });

/** The served default model (MiniLM): its layers, heads and widths. */
async function theModel() {
  await loadModels();
  return modelOf(null);
}

/** Layer and head pickers for a model; a change navigates. */
function layerHeadPickers(model, state, ctx, { head = true } = {}) {
  const pickers = [field('learn-layer', 'learn.layer', choice('learn-layer', range(model.n_layers).map((i) => [i, String(i)]), state.layer,
    (v) => ctx.navigate({ layer: Number(v) })))];
  if (head) {
    pickers.push(field('learn-head', 'learn.head', choice('learn-head', range(model.n_heads).map((i) => [i, String(i)]), state.head,
      (v) => ctx.navigate({ head: Number(v) }))));
  }
  return el('div', { class: 'learn-controls' }, pickers);
}

const argmax = (row) => row.reduce((best, x, j) => (x > row[best] ? j : best), 0);

/** Query, key, value: one head of MiniLM as a lookup: pick a query token, see its weights over the keys. */
export async function lookupView(root, state, ctx) {
  const model = await theModel();
  const layer = Math.min(state.layer, model.n_layers - 1);
  const head = Math.min(state.head, model.n_heads - 1);
  const data = await fetchLayer(sentence(state), layer);
  if (!ctx.current()) return;
  const query = Math.min(state.query, data.n - 1);
  const row = headRows(data, head)[query];
  const labels = data.tokens.map(tokenLabel);
  const chips = el('div', { class: 'chips learn-chips', role: 'group', 'aria-label': t('learn.query') },
    data.tokens.map((token, i) => {
      const chip = fillChip(el('button', { type: 'button', 'aria-pressed': String(i === query), dataset: { index: String(i) } }), token, i);
      chip.addEventListener('click', () => ctx.navigate({ query: i }));
      return chip;
    }));
  const plot = el('div', { id: 'learn-plot', class: 'learn-plot' });
  root.replaceChildren(layerHeadPickers(model, { ...state, layer, head }, ctx), said('p', 'learn.c1.pick', {}, [], { class: 'hint' }), chips, plot);
  await renderFigure(plot, barsFigure({ values: Array.from(row), labels, highlight: query, height: 280 }), { modeBar: false });
  const top = argmax(row);
  ctx.tokens(data.tokens, model.id);
  ctx.caption('learn.c1.caption', {
    layer, head, query: labels[query], key: labels[top], weight: fixed(row[top]), n: row.length,
  }, ['query', 'key']);
  ctx.links({ layer, head, query });
}

/** Many heads: every head of one layer side by side; choosing a head opens it. */
export async function headsView(root, state, ctx) {
  const model = await theModel();
  const layer = Math.min(state.layer, model.n_layers - 1);
  const head = Math.min(state.head, model.n_heads - 1);
  const data = await fetchLayer(sentence(state), layer);
  if (!ctx.current()) return;
  const grid = el('div', { class: 'learn-heads' });
  root.replaceChildren(layerHeadPickers(model, { ...state, layer, head }, ctx, { head: false }), grid);
  const cells = data.heads.map((h) => {
    const plot = el('div', { class: 'learn-head-plot', dataset: { head: String(h) } });
    const button = el('button', {
      type: 'button', class: 'button-secondary learn-head-button', 'aria-pressed': String(h === head), dataset: { head: String(h) },
      on: { click: () => ctx.navigate({ head: h }) },
    }, [t('learn.c4.head', { head: h })]);
    grid.append(el('figure', { class: `learn-head${h === head ? ' is-chosen' : ''}` }, [plot, button]));
    return { h, plot };
  });
  for (const { h, plot } of cells) {
    const figure = attentionHeatmapFigure({ tokens: data.tokens, matrix: headRows(data, h), layer, head: h, size: 240 });
    // a thumbnail: the button under it names the head, one colour scale per head as in the explorer's grid
    figure.layout = { ...figure.layout, title: { text: '' }, height: 250, margin: { t: 6, r: 4, b: 4, l: 4 } };
    figure.data[0].showscale = false;
    // eslint-disable-next-line no-await-in-loop
    await renderFigure(plot, figure, { modeBar: false });
    if (!ctx.current()) return;
  }
  ctx.tokens(data.tokens, model.id);
  ctx.caption('learn.c4.caption', {
    layer, heads: model.n_heads, dHead: model.d_head, dModel: model.d_model, product: model.n_heads * model.d_head,
  });
  ctx.links({ layer, head });
}

/** Shares of a row-normalised map's weight on the special tokens, averaged over its rows. */
function specialShare(rows, special) {
  let total = 0;
  for (const row of rows) {
    const sum = row.reduce((s, x) => s + x, 0);
    const on = row.reduce((s, x, j) => s + (special[j] ? x : 0), 0);
    total += sum > 0 ? on / sum : 0;
  }
  return total / rows.length;
}

/** A real model: the heads that look at [CLS] and [SEP] on the learner's sentence, what contributions say of
 * the chosen one, and the 'it → animal' head on the notes' example. */
export async function specialsView(root, state, ctx) {
  const model = await theModel();
  const layer = Math.min(state.layer, model.n_layers - 1);
  const head = Math.min(state.head, model.n_heads - 1);
  const [metrics, data, contributions] = await Promise.all([
    fetchMetrics(sentence(state)), fetchLayer(sentence(state), layer), fetchContribution(sentence(state), layer, head),
  ]);
  if (!ctx.current()) return;
  const shares = metrics.metrics.to_cls.map((row, l) => row.map((x, h) => x + metrics.metrics.to_sep[l][h])); // (layer, head)
  const heavy = shares.flat().filter((x) => x > 0.5).length;
  const special = data.tokens.map((token) => Boolean(token.special));
  const weight = specialShare(headRows(data, head), special);
  const contribution = specialShare(contributions, special);

  const map = el('div', { id: 'learn-specials', class: 'learn-plot' });
  root.replaceChildren(layerHeadPickers(model, { ...state, layer, head }, ctx), said('p', 'learn.c7.map', {}, [], { class: 'hint' }), map);
  const figure = matrixFigure({
    z: shares, kind: 'weights', range: 1, rowLabels: range(model.n_layers).map((l) => t('learn.c7.layerRow', { layer: l })), rowName: null,
    colLabels: range(model.n_heads).map(String), colName: t('learn.head'), cellPx: 30, numbers: root.clientWidth >= 640, // 72 numbers fit on a wide screen only
    highlights: [{ row0: layer, row1: layer, col0: head, col1: head }],
  });
  await renderFigure(map, figure, { modeBar: false });
  map.on?.('plotly_click', (event) => {
    const point = event.points && event.points[0];
    if (point) ctx.navigate({ layer: Number(point.y), head: Number(point.x) });
  });
  ctx.tokens(data.tokens, model.id);
  ctx.caption('learn.c7.caption', {
    heavy, total: model.n_layers * model.n_heads, layer, head, weight: percent(weight), contribution: percent(contribution),
  });
  ctx.links({ layer, head, query: state.query });
}

/** The real-model chapter's second view: the example sentence's 'it' row in the head that links it to 'animal'. */
export async function itView(root, ctx, example) {
  const data = await fetchLayer({ text: example.text, pair: null, model: null }, example.layer);
  if (!ctx.current()) return;
  const row = headRows(data, example.head)[example.query];
  const labels = data.tokens.map(tokenLabel);
  const plot = el('div', { id: 'learn-it', class: 'learn-plot' });
  const caption = el('p', { id: 'learn-it-caption', class: 'learn-caption' });
  const top = argmax(row);
  caption.append(...said('span', 'learn.c7.it', {
    layer: example.layer, head: example.head, query: labels[example.query], key: labels[top], weight: fixed(row[top]),
  }, ['query', 'key']).childNodes);
  root.replaceChildren(plot, caption);
  await renderFigure(plot, barsFigure({ values: Array.from(row), labels, highlight: example.query, height: 260 }), { modeBar: false });
}
