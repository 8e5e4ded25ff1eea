// The explorer page (/): every layer's and head's attention for a sentence, and one head large.
// All state lives in the URL: /?text=…&pair=…&model=…&layer=…&head=…&query=…
// (`query` is the token a click on the large map chose: "Step through this head" opens /steps at it).
// Only what is on screen is downloaded: the grid from max-pooled summaries (at most 64 x 64 a head),
// the selected head at full resolution, both in the compact u16 encoding.
// The grid is canvases: it needs no Plotly, and plotly.js (4.8 MB) is added only once the grid is
// on screen (or the intro is), for the large map of the selected head.
import { getAttentionCompact, getSummaryCompact } from './api.js';
import { toRows } from './compact.js';
import { tokenLabel } from './figures/axes.js';
import { attentionHeatmapFigure } from './figures/heatmap.js';
import {
  $, createPage, createRunForm, createStatus, indexParam, latestWins, linkTo, Lru, setTitle, t,
} from './page.js';
import { fillIndices } from './views/controls.js';
import { loadPlotly, preloadPlotly } from './views/plotly-loader.js';
import { createOverview } from './views/overview.js';
import { renderTokens } from './views/tokens.js';

const els = {
  intro: $('intro'),
  results: $('results'),
  tokens: $('tokens'),
  tokenCount: $('token-count'),
  unknownNote: $('unknown-note'),
  unknownKey: $('unknown-key'),
  layer: $('layer-select'),
  head: $('head-select'),
  heatmap: $('heatmap'),
  queryNote: $('query-note'),
  stepsLink: $('steps-link'),
};

const page = createPage({
  path: '/',
  read: (params) => ({
    text: params.get('text'), // null: nothing to show yet; '' or blank: the server says what to change
    pair: params.get('pair') || null,
    model: params.get('model') || null,
    layer: indexParam(params.get('layer')),
    head: indexParam(params.get('head')),
    query: indexParam(params.get('query')),
  }),
  write: (state) => {
    const params = new URLSearchParams();
    if (state.text === null) return params;
    params.set('text', state.text);
    if (state.pair !== null) params.set('pair', state.pair);
    if (state.model !== null) params.set('model', state.model);
    params.set('layer', String(state.layer));
    params.set('head', String(state.head));
    if (state.query) params.set('query', String(state.query));
    return params;
  },
  render,
});

const status = createStatus();
const form = createRunForm({
  status,
  onSubmit: (input) => {
    const previous = page.state();
    page.navigate({ ...input, layer: previous.layer, head: previous.head, query: 0 });
  },
});

// ---- data: a sentence's overview (pooled maps) and single heads at full resolution ----

const sentenceKey = (state) => JSON.stringify([state.text, state.pair, state.model]);
const sentence = (state) => ({ text: state.text, text_pair: state.pair, model: state.model });
const overviews = new Lru(4); // sentence -> tokens and every head's pooled map
const heads = new Lru(24); // sentence|layer|head -> the head's full map as rows (query, key)

function fetchOverview(state) {
  return overviews.load(sentenceKey(state), async () => {
    const { header, maps } = await getSummaryCompact(sentence(state));
    const side = header.shape[2];
    return { ...header, attention: maps.map((row) => row.map((flat) => toRows(flat, side, side))) };
  });
}

function fetchHead(state) {
  return heads.load(`${sentenceKey(state)}|${state.layer}|${state.head}`, async () => {
    const { header, maps } = await getAttentionCompact({ ...sentence(state), layers: [state.layer], heads: [state.head] });
    const n = header.shape[2];
    return toRows(maps[0][0], n, n);
  });
}

// ---- rendering -----------------------------------------------------------

const overview = createOverview($('overview'), {
  onSelect: (layer, head) => choose({ layer, head }),
  colourRamp: $('colour-ramp'),
});

/** The large map's view (views/heatmap.js), once plotly.js has run. */
const heatmapView = () => loadPlotly().then(() => import('./views/heatmap.js'));

/** Resolves after the next frame is painted. */
const afterPaint = () => new Promise((resolve) => { requestAnimationFrame(() => setTimeout(resolve, 0)); });

let shown = null; // {key, state}: what the results area shows; head and query choices start from it
const guard = latestWins();

function drawSentence(result) {
  renderTokens(els.tokens, result.tokens);
  els.tokenCount.textContent = `(${result.tokens.length})`;
  const unknown = result.tokens.filter((token) => token.unknown).length;
  els.unknownNote.hidden = unknown === 0;
  els.unknownKey.hidden = unknown === 0;
  els.unknownNote.textContent = unknown ? t('tokens.unknownNote', { count: unknown, unk: '[UNK]' }) : '';
  overview.render(result);
  fillIndices(els.layer, result.layers);
  fillIndices(els.head, result.heads);
}

/** The chosen query token, and /steps for this sentence, layer, head and query. */
function drawQuery(result, state) {
  const label = document.createElement('span');
  label.textContent = t('explorer.query', { query: state.query });
  const token = document.createElement('span');
  token.className = 'query-token';
  token.translate = false;
  token.textContent = tokenLabel(result.tokens[state.query]);
  els.queryNote.replaceChildren(label, ' ', token);

  els.stepsLink.href = linkTo('/steps', state, ['layer', 'head', 'query']);
  els.stepsLink.title = t('explorer.detail.stepsTitle', state);
}

/** Render the view for a state (from the URL). Fetches the overview only when the sentence changed. */
async function render(state) {
  const ticket = guard.begin();
  form.write(state);
  if (state.text === null) {
    status.busy(false);
    els.results.hidden = true;
    els.intro.hidden = false;
    status.info();
    setTitle('page.explorer');
    preloadPlotly(); // ready for the first sentence
    return;
  }

  const key = sentenceKey(state);
  let result;
  if (!overviews.has(key)) {
    status.busy(true);
    status.info();
  }
  try {
    result = await fetchOverview(state);
  } catch (error) {
    if (guard.current(ticket)) status.error(error); // the last good result stays
    preloadPlotly(); // ready for the next sentence
    return;
  }
  if (!guard.current(ticket)) return;

  // An index the model or the sentence does not have falls back to the first one.
  const fixed = {
    ...state,
    layer: result.layers.includes(state.layer) ? state.layer : result.layers[0],
    head: result.heads.includes(state.head) ? state.head : result.heads[0],
    query: state.query < result.tokens.length ? state.query : 0,
  };
  page.replace(fixed);

  els.intro.hidden = true;
  els.results.hidden = false; // before Plotly measures the container
  const newSentence = !shown || shown.key !== key;
  if (newSentence) drawSentence(result);
  shown = { key, state: fixed };
  overview.select(fixed.layer, fixed.head);
  els.layer.value = String(fixed.layer);
  els.head.value = String(fixed.head);
  drawQuery(result, fixed);
  setTitle('page.explorer', state.text);

  const headMap = fetchHead(fixed); // downloads while the grid is painted
  headMap.catch(() => {}); // awaited below (no unhandled rejection meanwhile)
  let matrix;
  let view;
  try {
    if (newSentence) await afterPaint(); // the grid first: parsing plotly.js holds the main thread
    [matrix, view] = await Promise.all([headMap, heatmapView()]);
  } catch (error) {
    if (guard.current(ticket)) status.error(error);
    return;
  }
  if (!guard.current(ticket)) return;
  status.busy(false);
  const figure = attentionHeatmapFigure({
    tokens: result.tokens, matrix, layer: fixed.layer, head: fixed.head, query: fixed.query,
    size: els.heatmap.clientWidth,
  });
  await view.renderHeatmap(els.heatmap, figure, { text: state.text, layer: fixed.layer, head: fixed.head });
  status.info(t('explorer.summary', {
    tokens: result.tokens.length, layers: result.layers.length, heads: result.heads.length, model: result.model,
  }));
}

/** A user's choice of layer, head or query token, applied to what is on screen. */
function choose(change) {
  if (shown) page.navigate({ ...shown.state, ...change });
}

els.layer.addEventListener('change', () => choose({ layer: Number(els.layer.value) }));
els.head.addEventListener('change', () => choose({ head: Number(els.head.value) }));
els.heatmap.addEventListener('plotly-query', (event) => choose({ query: event.detail.query }));

page.start();
