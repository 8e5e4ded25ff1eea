// The /toy page's setup as URL query parameters, and back:
//   /toy?q=1,0,2,1;0,1,1,2&k=…&v=…&wq=…&wk=…&wv=…&wo=…&heads=2&causal=1&head=1&query=2&step=scores
// Rows are separated by ";" and numbers by ","; a matrix left out is the worked example's (weights:
// the identity), and so are heads (2), causal (off), head, query (0) and step (input). Only what
// differs from the example is written. A part that cannot be read falls back to the example's
// value and is listed in `unreadable` (by its toy.name.* field), so the page can say so.
// The mechanisms (see OPTIONS) follow the same rule:
//   &variant=gumbel&temperature=0.5&seed=3&straight_through=1&d_keys=1&d_values=3&positions=rope&hidden=1,3
//   (&variant=probsparse&factor=2: ProbSparse's sampling factor c, written only for probsparse when not 5;
//   &variant=cosine&scale=4: cosine's factor; &tau=2&delta=0,1,0,0: the de-stationary factors, δ one number or one per key)
// and so do the compare view (&compare=1), the permutation demo (&shuffle=1) and the backward pass
// (&backward=1, with &upstream=row: the gradient of the chosen query's output row only). With d_keys or
// d_values the weights' default is the rectangular identity of their shapes (widthsOf).
import { STEPS } from '../figures/steps.js';
import { indexParam } from '../page.js';
import { parseCell } from '../views/matrix-editor.js';

export const WEIGHTS = ['q', 'k', 'v', 'o'];
const PARAM = { queries: 'q', keys: 'k', values: 'v', wq: 'wq', wk: 'wk', wv: 'wv', wo: 'wo' };
const MAX_SIDE = 64; // the server's limit (model/lab/toy.py MAX_SIDE): a larger link is not read at all

export const identity = (n) => Array.from({ length: n }, (_, i) => Array.from({ length: n }, (_, j) => (i === j ? 1 : 0)));
export const identityWeights = (d) => Object.fromEntries(WEIGHTS.map((w) => [w, identity(d)]));
const same = (a, b) => JSON.stringify(a) === JSON.stringify(b);

export const VARIANTS = ['scaled_dot', 'dot', 'additive', 'hard', 'sample', 'gumbel', 'linear', 'probsparse', 'general', 'cosine'];
export const POSITIONS = ['none', 'sinusoidal', 'rope', 'alibi'];
export const UPSTREAMS = ['ones', 'row']; // the backward pass's upstream gradient: all ones, or the chosen query's row
const MAX_SEED = 2 ** 31 - 1;

/** The mechanisms' defaults: what a URL without their parameters means (the server's defaults). */
export const OPTION_DEFAULTS = Object.freeze({
  variant: 'scaled_dot', temperature: 1, seed: 0, straightThrough: false,
  dKeys: null, dValues: null, positions: 'none', hidden: [], factor: 5, scale: null, tau: 1, delta: 0,
});

/** The rows × cols matrix with ones on its diagonal (the identity when square). */
export const eye = (rows, cols) => Array.from({ length: rows }, (_, i) => Array.from({ length: cols }, (_, j) => (i === j ? 1 : 0)));

/** Widths of the weights for d_model, heads and the optional d_keys / d_values (null: d_model / heads). */
export function widthsOf(dModel, heads, dKeys = null, dValues = null) {
  const h = Number.isInteger(heads) && heads > 0 ? heads : 1;
  const even = dModel % h === 0 ? dModel / h : null;
  const width = (d) => (Number.isInteger(d) && d > 0 ? h * d : dModel);
  return { keys: width(dKeys ?? even), values: width(dValues ?? even) };
}

/** The default weights {q, k, v, o} for those widths: identity-like, as the worked example's. */
export function defaultWeights(dModel, heads, dKeys = null, dValues = null) {
  const { keys, values } = widthsOf(dModel, heads, dKeys, dValues);
  return { q: eye(dModel, keys), k: eye(dModel, keys), v: eye(dModel, values), o: eye(values, dModel) };
}

const wholeNumber = (max) => (text) => (/^\d{1,10}$/.test(text) && Number(text) <= max ? Number(text) : null);
const positiveNumber = (text) => {
  const value = Number(text);
  return /^[0-9.e+-]+$/i.test(text) && Number.isFinite(value) && value > 0 ? value : null;
};
/** δ as a URL writes it: one number, or numbers separated by "," (one per key). */
export const numberOrList = (text) => {
  const parts = text.split(',').map((x) => x.trim());
  const numbers = parts.map(Number);
  const readable = parts.length <= MAX_SIDE && parts.every((x) => /^[+-]?(\d+\.?\d*|\.\d+)(e[+-]?\d+)?$/i.test(x))
    && numbers.every(Number.isFinite);
  if (!readable) return null;
  return numbers.length === 1 ? numbers[0] : numbers;
};
const oneOf = (names) => (text) => (names.includes(text) ? text : null);
const indexList = (text) => (/^\d{1,2}(,\d{1,2})*$/.test(text) ? [...new Set(text.split(',').map(Number))].sort((a, b) => a - b) : null);
// The order the page lists unreadable parts in: as the setup panel shows them.
const FIELD_ORDER = ['queries', 'keys', 'values', 'wq', 'wk', 'wv', 'wo', 'n_heads', 'causal', 'variant', 'temperature',
  'seed', 'factor', 'scale', 'tau', 'delta', 'straight_through', 'd_keys', 'd_values', 'positions', 'hidden_keys', 'upstream'];
const flag = (text) => ({ 1: true, 0: false })[text] ?? null;

/** A matrix of numbers as URL text; String(x) reads back as exactly the same number. */
export function matrixToParam(matrix) {
  return matrix.map((row) => row.map(String).join(',')).join(';');
}

/** URL text -> a rectangular matrix of finite numbers (1 to 64 rows and columns), or null. */
export function matrixFromParam(text) {
  const rows = text.split(';').map((row) => row.split(',').map(parseCell));
  const width = rows[0].length;
  const readable = rows.length <= MAX_SIDE && width <= MAX_SIDE
    && rows.every((row) => row.length === width && row.every((x) => typeof x === 'number'));
  return readable ? rows : null;
}

/** Query parameters whose string form keeps the matrices' "," and ";" readable (both are legal there). */
class ReadableParams extends URLSearchParams {
  toString() {
    return super.toString().replace(/%2C/g, ',').replace(/%3B/g, ';');
  }
}

/**
 * The state a URL says, given the worked example ({queries, keys, values, heads}):
 * {queries, keys, values, weights: {q, k, v, o}, heads, causal, head, query, step, unreadable}.
 */
export function readState(params, example) {
  const unreadable = []; // the fields (toy.name.*) whose parameter fell back to the example's value
  const value = (param, field, parse, fallback) => {
    const text = params.get(param);
    if (text === null) return fallback;
    const parsed = parse(text);
    if (parsed !== null) return parsed;
    unreadable.push(field);
    return fallback;
  };
  const matrix = (name, fallback) => value(PARAM[name], name, matrixFromParam, fallback);
  const queries = matrix('queries', example.queries);
  const step = params.get('step');
  const heads = value('heads', 'n_heads', (text) => (/^\d{1,2}$/.test(text) ? Number(text) : null), example.heads);
  const D = OPTION_DEFAULTS;
  const dKeys = value('d_keys', 'd_keys', wholeNumber(64), D.dKeys);
  const dValues = value('d_values', 'd_values', wholeNumber(64), D.dValues);
  const weights = defaultWeights(queries[0].length, heads, dKeys, dValues);
  return {
    queries,
    keys: matrix('keys', example.keys),
    values: matrix('values', example.values),
    weights: Object.fromEntries(WEIGHTS.map((w) => [w, matrix(`w${w}`, weights[w])])),
    heads,
    causal: value('causal', 'causal', flag, false),
    variant: value('variant', 'variant', oneOf(VARIANTS), D.variant),
    temperature: value('temperature', 'temperature', positiveNumber, D.temperature),
    seed: value('seed', 'seed', wholeNumber(MAX_SEED), D.seed),
    straightThrough: value('straight_through', 'straight_through', flag, D.straightThrough),
    factor: value('factor', 'factor', wholeNumber(64), D.factor),
    scale: value('scale', 'scale', positiveNumber, D.scale),
    tau: value('tau', 'tau', positiveNumber, D.tau),
    delta: value('delta', 'delta', numberOrList, D.delta),
    dKeys,
    dValues,
    positions: value('positions', 'positions', oneOf(POSITIONS), D.positions),
    hidden: value('hidden', 'hidden_keys', indexList, D.hidden),
    compare: params.get('compare') === '1',
    shuffle: params.get('shuffle') === '1',
    backward: params.get('backward') === '1',
    upstream: value('upstream', 'upstream', oneOf(UPSTREAMS), 'ones'),
    unreadable: unreadable.sort((a, b) => FIELD_ORDER.indexOf(a) - FIELD_ORDER.indexOf(b)),
    head: indexParam(params.get('head')),
    query: indexParam(params.get('query')),
    step: STEPS.includes(step) ? step : 'input',
  };
}

/** The URL parameters of a state: only what differs from the worked example. */
export function writeState(state, example) {
  const params = new ReadableParams();
  const put = (name, matrix, fallback) => {
    if (!same(matrix, fallback)) params.set(PARAM[name], matrixToParam(matrix));
  };
  put('queries', state.queries, example.queries);
  put('keys', state.keys, example.keys);
  put('values', state.values, example.values);
  const weights = defaultWeights(state.queries[0].length, state.heads, state.dKeys ?? null, state.dValues ?? null);
  for (const w of WEIGHTS) put(`w${w}`, state.weights[w], weights[w]);
  if (state.heads !== example.heads) params.set('heads', String(state.heads));
  if (state.causal) params.set('causal', '1');
  const D = OPTION_DEFAULTS;
  if (state.variant && state.variant !== D.variant) params.set('variant', state.variant);
  if (state.temperature != null && state.temperature !== D.temperature) params.set('temperature', String(state.temperature));
  if (state.seed) params.set('seed', String(state.seed));
  if (state.straightThrough) params.set('straight_through', '1');
  if (state.variant === 'probsparse' && state.factor != null && state.factor !== D.factor) params.set('factor', String(state.factor));
  if (state.variant === 'cosine' && state.scale != null) params.set('scale', String(state.scale));
  if (state.tau != null && state.tau !== D.tau) params.set('tau', String(state.tau));
  if (state.delta != null && !same(state.delta, D.delta)) params.set('delta', Array.isArray(state.delta) ? state.delta.join(',') : String(state.delta));
  if (state.dKeys != null) params.set('d_keys', String(state.dKeys));
  if (state.dValues != null) params.set('d_values', String(state.dValues));
  if (state.positions && state.positions !== D.positions) params.set('positions', state.positions);
  if (state.hidden?.length) params.set('hidden', state.hidden.join(','));
  if (state.compare) params.set('compare', '1');
  if (state.shuffle) params.set('shuffle', '1');
  if (state.backward) params.set('backward', '1');
  if (state.upstream && state.upstream !== 'ones') params.set('upstream', state.upstream);
  if (state.head) params.set('head', String(state.head));
  if (state.query) params.set('query', String(state.query));
  if (state.step !== 'input') params.set('step', state.step);
  return params;
}
