// The chapters about sizes: positions (GET /api/v1/positions, the /positions page's figures) and cost
// (GET /api/v1/cost, the /cost page's formatting and memory plot).
import { getCost, getPositions } from '../api.js';
import { binaryBytes, decimalBytes, exact, memoryFigure } from '../figures/cost.js';
import { distanceFigure, similarityByDistance, tableFigure } from '../figures/positions.js';
import { lang, t } from '../i18n/index.js';
import { loadModels, Lru, modelOf } from '../page.js';
import { renderFigure } from '../views/plot.js';
import { el, fixed, toggles } from './dom.js';

const answers = new Lru(16);
const LOCALE = lang === 'zh' ? 'zh-CN' : 'en';

export const LENGTHS = Object.freeze([16, 32, 64, 128]);
export const WIDTHS = Object.freeze([16, 64, 128]);

/** Positions: the sinusoidal table, and how alike two positions are against their distance (sinusoidal
 * beside the model's learned table). */
export async function positionsView(root, state, ctx) {
  await loadModels();
  const model = modelOf(null);
  const length = Math.min(state.length, model.max_tokens);
  const load = (query) => answers.load(JSON.stringify(query), () => getPositions(query));
  const [sinusoidal, learned] = await Promise.all([
    load({ kind: 'sinusoidal', length, d_model: state.d_model }), load({ kind: 'learned', length, model: model.id }),
  ]);
  if (!ctx.current()) return;
  const table = el('div', { id: 'learn-table', class: 'learn-plot' });
  const distance = el('div', { id: 'learn-distance', class: 'learn-plot' });
  root.replaceChildren(
    el('div', { class: 'learn-controls learn-controls-wrap' }, [
      toggles('learn.c6.length', LENGTHS.map((n) => [n, String(n)]), length, (n) => ctx.navigate({ length: n }), { id: 'learn-lengths' }),
      toggles('learn.c6.width', WIDTHS.map((d) => [d, String(d)]), state.d_model, (d) => ctx.navigate({ d_model: d }), { id: 'learn-dims' }),
    ]),
    el('h2', { text: t('learn.c6.tableHeading') }), table,
    el('h2', { text: t('learn.c6.distanceHeading') }), distance,
  );
  await renderFigure(table, tableFigure(sinusoidal.matrix, { height: 300 }), { modeBar: false });
  await renderFigure(distance, distanceFigure([
    { name: t('positions.sinusoidal.name'), values: similarityByDistance(sinusoidal.matrix) },
    { name: t('positions.learned.name', { model: model.id }), values: similarityByDistance(learned.matrix) },
  ]), { modeBar: false });
  const values = sinusoidal.matrix.flat();
  ctx.caption('learn.c6.caption', {
    length, dModel: sinusoidal.d_model, min: fixed(Math.min(...values), 3), max: fixed(Math.max(...values), 3),
    learned: learned.d_model, model: model.id,
  });
  ctx.links({ length, d_model: state.d_model });
}

// 10⁶ tokens at E = 4096 would need more FLOPs than a JSON number keeps exact: the API refuses it.
export const SEQ_LENS = Object.freeze([1000, 10000, 100000]);
export const HEADS = Object.freeze([8, 16, 64]);
export const EMBEDDINGS = Object.freeze([512, 4096]);

// The table's rows: the per-layer quantities of GET /api/v1/cost the chapter explains.
export const COST_ROWS = Object.freeze(['parameters', 'attention_matrix_bytes', 'flash_attention_bytes', 'kv_cache_bytes']);
// The symbols the table's formulas and the plot's legend use, each defined under the plot with its value.
export const SYMBOLS = Object.freeze(['E', 'H', 'D', 'G', 'S', 'B', 'b', 'matrices', 'flash']);
const SYMBOL_TERMS = { matrices: 'A, K, V', flash: 'O, m, ℓ' }; // several symbols on one line

/** Bytes as one amount with both units: "1.28 TB (1.16 TiB)". */
export const bothUnits = (n) => `${decimalBytes(n)} (${binaryBytes(n)})`;

let sideways = null; // the observer that shows the scroll hint while the table is wider than its box

/** Show `hint` while `wrap` scrolls sideways (its table wider than it), now and whenever its size changes. */
function watchOverflow(wrap, hint) {
  sideways?.disconnect();
  const check = () => { hint.hidden = wrap.scrollWidth <= wrap.clientWidth + 1; };
  if (typeof ResizeObserver === 'function') {
    sideways = new ResizeObserver(check);
    sideways.observe(wrap);
  }
  check();
}

/** The cost chapter: parameters, the attention matrix, FlashAttention's working set and the KV cache for E, H
 * and S (fp16, B = 1, G = H), the memory plot, and every symbol of its formulas defined with its value. */
export async function costView(root, state, ctx) {
  const sizes = { d_model: state.d_model, n_heads: state.n_heads, seq_len: state.seq_len, batch: 1, n_layers: 1, bytes: 2, bias: true };
  const answer = await answers.load(JSON.stringify(sizes), () => getCost(sizes));
  if (!ctx.current()) return;
  const rows = COST_ROWS.map((name) => {
    const item = answer.per_layer[name];
    const bytes = name !== 'parameters';
    return el('tr', { dataset: { quantity: name, value: String(item.value) } }, [
      el('th', { scope: 'row', text: t(`learn.c9.${name}`) }),
      el('td', { translate: 'no', class: 'learn-formula' }, [item.formula, el('br'), item.filled]),
      el('td', { class: 'learn-number' }, [bytes ? t('learn.c9.bytes', { n: exact(item.value, LOCALE), amount: bothUnits(item.value) })
        : exact(item.value, LOCALE)]),
    ]);
  });
  const plot = el('div', { id: 'learn-memory', class: 'learn-plot' });
  const hint = el('p', { id: 'learn-cost-scroll', class: 'hint learn-scroll-hint', text: t('learn.c9.scroll'), hidden: true });
  const wrap = el('div', { class: 'learn-table-wrap', tabindex: '0', role: 'region', 'aria-label': t('learn.c9.tableLabel') }, [
    el('table', { id: 'learn-cost', class: 'learn-table' }, [
      el('thead', {}, [el('tr', {}, [el('th', { scope: 'col', text: t('learn.c9.quantity') }), el('th', { scope: 'col', text: t('learn.c9.formula') }),
        el('th', { scope: 'col', text: t('learn.c9.value') })])]),
      el('tbody', {}, rows),
    ])]);
  const { sizes: used } = answer;
  const symbols = {
    E: used.d_model, H: used.n_heads, D: used.d_head, G: used.n_kv_heads, S: exact(used.seq_len, LOCALE), B: used.batch, b: used.bytes,
  };
  const legend = el('dl', { id: 'learn-symbols', class: 'learn-symbols' }, SYMBOLS.flatMap((name) => [
    el('dt', { translate: 'no', text: SYMBOL_TERMS[name] ?? name }),
    el('dd', { dataset: { symbol: name } }, [t(`learn.c9.symbol.${name}`, symbols)]),
  ]));
  root.replaceChildren(
    el('div', { class: 'learn-controls learn-controls-wrap' }, [
      toggles('learn.c9.E', EMBEDDINGS.map((n) => [n, `E = ${n}`]), state.d_model, (n) => ctx.navigate({ d_model: n }), { id: 'learn-E' }),
      toggles('learn.c9.H', HEADS.map((n) => [n, `H = ${n}`]), state.n_heads, (n) => ctx.navigate({ n_heads: n }), { id: 'learn-H' }),
      toggles('learn.c9.S', SEQ_LENS.map((n) => [n, `S = ${exact(n, LOCALE)}`]), state.seq_len, (n) => ctx.navigate({ seq_len: n }), { id: 'learn-S' }),
    ]),
    el('p', { class: 'hint', text: t('learn.c9.fixed') }),
    hint,
    wrap,
    plot,
    el('h2', { id: 'learn-symbols-heading', text: t('learn.c9.symbols') }),
    legend,
  );
  watchOverflow(wrap, hint);
  const figure = memoryFigure(answer.curve, state.seq_len, { height: 340 });
  if (root.clientWidth < 520) { // a phone: the legend's formulas fit in a smaller font
    figure.layout = { ...figure.layout, legend: { ...figure.layout.legend, font: { size: 10 } } };
  }
  await renderFigure(plot, figure, { modeBar: false });
  const matrix = answer.per_layer.attention_matrix_bytes.value;
  const flash = answer.per_layer.flash_attention_bytes.value;
  const kv = answer.per_layer.kv_cache_bytes.value;
  ctx.caption('learn.c9.caption', {
    S: exact(state.seq_len, LOCALE), H: state.n_heads, matrix: bothUnits(matrix),
    flash: bothUnits(flash), ratio: exact(Math.round(matrix / flash), LOCALE), kv: bothUnits(kv),
  });
  ctx.links({ d_model: state.d_model, n_heads: state.n_heads, seq_len: state.seq_len });
}
