// The corpus page (/corpus, served with `attnscope serve --corpus DIR`): one head across a whole corpus. The
// head's top texts by a metric (or by two token patterns), each drawn with the head's strongest pairs and
// linked to the explorer at that head, and every head by two metrics (a scatter; a click chooses a head).
// Everything comes from GET /api/v1/corpus…; the state lives in the URL (views/corpus-state.js).
import { $, createPage, createStatus, errorMessage, fillSelect, latestWins, loadModels, Lru, range, setTitle, t } from './page.js';
import { headName, headsCaptionParts, headsFigure, textsCaptionParts } from './figures/corpus.js';
import { tNodes } from './i18n/index.js';
import { getCorpus, getHeads, getPatternTexts, getTopTexts } from './views/corpus-data.js';
import { explorerLink, MAX_K, readState, settle, writeState } from './views/corpus-state.js';
import { redrawArcs, renderTexts } from './views/corpus-texts.js';
import { loadPlotly } from './views/plotly-loader.js';
import { renderFigure } from './views/plot.js';

const els = {
  info: $('corpus-info'),
  form: $('corpus-form'), layer: $('corpus-layer'), head: $('corpus-head'), by: $('corpus-by'),
  order: $('corpus-order'), k: $('corpus-k'),
  pattern: $('pattern-form'), query: $('corpus-query'), key: $('corpus-key'), clear: $('pattern-clear'),
  caption: $('corpus-caption'), texts: $('corpus-texts'),
  x: $('corpus-x'), y: $('corpus-y'), scatter: $('corpus-scatter'), scatterCaption: $('corpus-scatter-caption'),
};

const status = createStatus();
const guard = latestWins();
const headsCache = new Lru(16);
let info = null; // GET /api/v1/corpus
let servedModel = null; // the corpus's model when this server serves it (the explorer's `model`), else null
let shown = null; // the settled state on screen

const page = createPage({ path: '/corpus', read: readState, write: writeState, render });

function fillMetrics(select, value) {
  select.replaceChildren(...info.metrics.map((name) => {
    const option = document.createElement('option');
    option.value = name;
    option.textContent = name;
    return option;
  }));
  select.value = value;
}

function showForm(state) {
  fillSelect(els.layer, range(info.n_layers).map(String), state.layer);
  fillSelect(els.head, range(info.n_heads).map(String), state.head);
  els.by.value = state.by;
  els.order.value = state.lowest ? 'lowest' : 'highest';
  // A box being typed in keeps what is typed (the first answers may arrive while someone types a pattern).
  const keep = (input, value) => { if (document.activeElement !== input) input.value = value; };
  keep(els.k, String(state.k));
  keep(els.query, state.query ?? '');
  keep(els.key, state.key ?? '');
  els.clear.hidden = state.query === null;
  els.x.value = state.x;
  els.y.value = state.y;
}

async function drawScatter(state, ticket) {
  const answer = await headsCache.load(`${state.x}\u0000${state.y}`, () => getHeads({ x: state.x, y: state.y }));
  await loadPlotly();
  if (!guard.current(ticket)) return;
  const chosen = { layer: state.layer, head: state.head };
  await renderFigure(els.scatter, headsFigure(answer, chosen), { filename: `corpus-heads-${state.x}-${state.y}` });
  const caption = headsCaptionParts(answer, chosen, info);
  els.scatterCaption.replaceChildren(...tNodes(caption.key, caption.values, caption.data));
  if (!els.scatter.dataset.bound) {
    els.scatter.dataset.bound = '1';
    els.scatter.on('plotly_click', (event) => {
      const point = event.points && event.points[0];
      if (point && Array.isArray(point.customdata)) choose({ layer: point.customdata[0], head: point.customdata[1] });
    });
  }
}

async function drawTexts(state, ticket) {
  const answer = state.query !== null
    ? await getPatternTexts(state)
    : await getTopTexts(state);
  if (!guard.current(ticket)) return;
  const caption = textsCaptionParts({ ...answer, query: answer.query ?? null, key: answer.key ?? null });
  els.caption.replaceChildren(...tNodes(caption.key, caption.values, caption.data));
  const valueLabel = state.query !== null ? { label: t('corpus.text.weight'), data: false } : { label: state.by, data: true };
  renderTexts(els.texts, answer.results, {
    valueLabel,
    hrefOf: (result) => explorerLink({
      text: result.text, model: servedModel, layer: state.layer, head: state.head,
      lang: new URLSearchParams(window.location.search).get('lang'),
    }),
  });
}

async function render(raw) {
  const ticket = guard.begin();
  status.busy(true);
  try {
    if (info === null) {
      info = await getCorpus();
      const models = await loadModels().catch(() => []);
      servedModel = models.some((m) => m.id === info.model) ? info.model : null;
      els.info.textContent = t(servedModel !== null ? 'corpus.info' : 'corpus.info.notServed', {
        model: info.model, layers: info.n_layers, heads: info.n_heads, texts: info.texts, skipped: info.skipped,
      });
      fillMetrics(els.by, info.metrics[0]);
      fillMetrics(els.x, info.metrics[0]);
      fillMetrics(els.y, info.metrics[0]);
    }
    const state = settle(raw, info);
    if (writeState(state).toString() !== writeState(raw).toString()) page.replace(state);
    shown = state;
    showForm(state);
    setTitle('page.corpus', headName(state.layer, state.head));
    await Promise.all([drawTexts(state, ticket), drawScatter(state, ticket)]);
    if (guard.current(ticket)) {
      status.busy(false);
      status.info('');
    }
  } catch (error) {
    if (guard.current(ticket)) status.error(error);
  }
}

function choose(change) {
  if (shown === null) return;
  page.navigate({ ...shown, ...change });
}

function kValue() {
  const k = Number(els.k.value);
  return Number.isInteger(k) && k >= 1 && k <= MAX_K ? k : null;
}

els.form.addEventListener('submit', (event) => {
  event.preventDefault();
  const k = kValue();
  if (k === null) {
    status.problem(t('corpus.invalid.k', { most: MAX_K }));
    return;
  }
  choose({
    layer: Number(els.layer.value), head: Number(els.head.value), by: els.by.value,
    lowest: els.order.value === 'lowest', k, query: null, key: null,
  });
});
for (const select of [els.layer, els.head, els.by, els.order]) {
  select.addEventListener('change', () => els.form.requestSubmit());
}
els.pattern.addEventListener('submit', (event) => {
  event.preventDefault();
  const query = els.query.value;
  const key = els.key.value;
  if (!query || !key) {
    status.problem(t('corpus.invalid.pattern'));
    return;
  }
  choose({ layer: Number(els.layer.value), head: Number(els.head.value), query, key, k: kValue() ?? shown.k });
});
els.clear.addEventListener('click', () => choose({ query: null, key: null }));
els.x.addEventListener('change', () => choose({ x: els.x.value }));
els.y.addEventListener('change', () => choose({ y: els.y.value }));

// The text wraps differently at another width: the arcs follow their tokens.
let resizeFrame = 0;
new ResizeObserver(() => {
  cancelAnimationFrame(resizeFrame);
  resizeFrame = requestAnimationFrame(() => redrawArcs(els.texts));
}).observe(els.texts);

page.start().catch((error) => status.problem(errorMessage(error)));
