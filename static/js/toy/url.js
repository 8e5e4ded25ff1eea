// The /toy page's setup as URL query parameters, and back:
//   /toy?q=1,0,2,1;0,1,1,2&k=…&v=…&wq=…&wk=…&wv=…&wo=…&heads=2&causal=1&head=1&query=2&step=scores
// Rows are separated by ";" and numbers by ","; a matrix left out is the worked example's (weights:
// the identity), and so are heads (2), causal (off), head, query (0) and step (input). Only what
// differs from the example is written. A part that cannot be read falls back to the example's
// value and is listed in `unreadable` (by its toy.name.* field), so the page can say so.
import { STEPS } from '../figures/steps.js';
import { indexParam } from '../page.js';
import { parseCell } from '../views/matrix-editor.js';

export const WEIGHTS = ['q', 'k', 'v', 'o'];
const PARAM = { queries: 'q', keys: 'k', values: 'v', wq: 'wq', wk: 'wk', wv: 'wv', wo: 'wo' };
const MAX_SIDE = 64; // the server's limit (model/toy.py MAX_SIDE): a larger link is not read at all

export const identity = (n) => Array.from({ length: n }, (_, i) => Array.from({ length: n }, (_, j) => (i === j ? 1 : 0)));
export const identityWeights = (d) => Object.fromEntries(WEIGHTS.map((w) => [w, identity(d)]));
const same = (a, b) => JSON.stringify(a) === JSON.stringify(b);

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
  return {
    queries,
    keys: matrix('keys', example.keys),
    values: matrix('values', example.values),
    weights: Object.fromEntries(WEIGHTS.map((w) => [w, matrix(`w${w}`, identity(queries[0].length))])),
    heads: value('heads', 'n_heads', (text) => (/^\d{1,2}$/.test(text) ? Number(text) : null), example.heads),
    causal: value('causal', 'causal', (text) => ({ 1: true, 0: false })[text] ?? null, false),
    head: indexParam(params.get('head')),
    query: indexParam(params.get('query')),
    step: STEPS.includes(step) ? step : 'input',
    unreadable,
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
  for (const w of WEIGHTS) put(`w${w}`, state.weights[w], identity(state.queries[0].length));
  if (state.heads !== example.heads) params.set('heads', String(state.heads));
  if (state.causal) params.set('causal', '1');
  if (state.head) params.set('head', String(state.head));
  if (state.query) params.set('query', String(state.query));
  if (state.step !== 'input') params.set('step', state.step);
  return params;
}
