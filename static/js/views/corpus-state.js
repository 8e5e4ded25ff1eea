// The /corpus page's state in its URL, and the link that opens the explorer on one of its texts. No DOM here.
//   /corpus?layer=L&head=H&by=METRIC&lowest=1&k=K      one head's texts ranked by a metric (highest first;
//                                                       lowest=1: lowest first)
//   …&query=REGEX&key=REGEX                            the pattern query instead: both regexes given
//   …&x=METRIC&y=METRIC                                the scatter's metrics
// A layer, head or metric the corpus does not have is replaced by the first one it has (settle()).

export const DEFAULT_K = 20;
export const MAX_K = 100; // the API's bound (app/schemas/corpus.py)
export const MAX_PATTERN = 200;

const index = (value) => (value !== null && /^\d{1,6}$/.test(value) ? Number(value) : 0);
const metricName = (value) => (value !== null && /^[a-z][a-z0-9_]{0,63}$/.test(value) ? value : null);
const pattern = (value) => (value !== null && value.length >= 1 && value.length <= MAX_PATTERN ? value : null);

/** The state of a query string; metrics are checked against the corpus later (settle). */
export function readState(params) {
  const k = /^\d{1,3}$/.test(params.get('k') ?? '') ? Number(params.get('k')) : DEFAULT_K;
  const query = pattern(params.get('query'));
  const key = pattern(params.get('key'));
  const both = query !== null && key !== null;
  return {
    layer: index(params.get('layer')),
    head: index(params.get('head')),
    by: metricName(params.get('by')),
    lowest: params.get('lowest') === '1',
    k: Math.min(Math.max(k, 1), MAX_K),
    query: both ? query : null,
    key: both ? key : null,
    x: metricName(params.get('x')),
    y: metricName(params.get('y')),
  };
}

/** The query string of a state (defaults left out). */
export function writeState(state) {
  const params = new URLSearchParams();
  params.set('layer', String(state.layer));
  params.set('head', String(state.head));
  if (state.by !== null) params.set('by', state.by);
  if (state.lowest) params.set('lowest', '1');
  if (state.k !== DEFAULT_K) params.set('k', String(state.k));
  if (state.query !== null && state.key !== null) {
    params.set('query', state.query);
    params.set('key', state.key);
  }
  if (state.x !== null) params.set('x', state.x);
  if (state.y !== null) params.set('y', state.y);
  return params;
}

/** The metric to rank by first: the previous-token share when the corpus has it, else its first metric. */
function preferred(metrics, wanted) {
  return metrics.includes(wanted) ? wanted : metrics[0] ?? null;
}

/**
 * The state within what the corpus has (GET /api/v1/corpus: n_layers, n_heads, metrics): an index out of range
 * becomes 0, an unknown metric the default (by: to_previous, x: entropy, y: to_previous, when the corpus has them).
 */
export function settle(state, info) {
  const { metrics } = info;
  const known = (name, fallback) => (name !== null && metrics.includes(name) ? name : preferred(metrics, fallback));
  return {
    ...state,
    layer: state.layer < info.n_layers ? state.layer : 0,
    head: state.head < info.n_heads ? state.head : 0,
    by: known(state.by, 'to_previous'),
    x: known(state.x, 'entropy'),
    y: known(state.y, 'to_previous'),
  };
}

/**
 * The explorer's URL for one text at one head (static/js/explorer-page.js reads text, model, layer and head);
 * `model` is left out when it is null (the explorer's default model), `lang` kept when given.
 */
export function explorerLink({ text, model = null, layer, head, lang = null }) {
  const params = new URLSearchParams({ text });
  if (model !== null) params.set('model', model);
  params.set('layer', String(layer));
  params.set('head', String(head));
  if (lang !== null) params.set('lang', lang);
  return `/?${params}`;
}
