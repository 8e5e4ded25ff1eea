// Fetch wrappers for the attnscope REST API (/api/v1). Every failure becomes an ApiError: its
// `code` says what kind of failure it was (the page shell words it in the page's language) and
// its message is the server's own `detail`, when the server sent one.

import { decodeTraceF32, decodeU16 } from './compact.js';

export class ApiError extends Error {
  /**
   * @param {number} status HTTP status, or 0 when the server could not be reached
   * @param {'unreachable'|'http'|'not-json'} code what went wrong
   * @param {string} detail the server's `detail`, or '' when it sent none
   * @param {unknown} [body] the parsed JSON body, if any
   */
  constructor(status, code, detail = '', body = null) {
    super(detail || `${code} ${status}`);
    this.name = 'ApiError';
    this.status = status;
    this.code = code;
    this.detail = detail;
    this.body = body;
  }
}

function detailOf(body) {
  const detail = body && typeof body === 'object' ? body.detail : undefined;
  return typeof detail === 'string' ? detail.trim() : '';
}

/** fetch, with every failure (network or non-2xx) turned into an ApiError carrying the server's detail. */
async function send(path, init = {}, accept = 'application/json') {
  let response;
  try {
    response = await fetch(path, { ...init, headers: { Accept: accept, ...(init.headers || {}) } });
  } catch (error) {
    if (error && error.name === 'AbortError') throw error;
    throw new ApiError(0, 'unreachable');
  }
  if (!response.ok) {
    const body = await parseJson(response);
    throw new ApiError(response.status, 'http', detailOf(body), body);
  }
  return response;
}

async function parseJson(response) {
  const raw = await response.text();
  try {
    return raw ? JSON.parse(raw) : null;
  } catch {
    return null;
  }
}

async function requestJson(path, init = {}) {
  const response = await send(path, init);
  const body = await parseJson(response);
  if (body === null) throw new ApiError(response.status, 'not-json');
  return body;
}

const postJson = (body) => ({
  method: 'POST',
  headers: { 'Content-Type': 'application/json' },
  body: JSON.stringify(body),
});

/** POST a request with ?encoding=`encoding` and decode the binary answer with `decode`. */
async function requestCompact(path, body, encoding = 'u16', decode = decodeU16) {
  const response = await send(`${path}?encoding=${encoding}`, postJson(body), 'application/octet-stream');
  return decode(await response.arrayBuffer());
}

/** GET /api/v1/models -> the list of models ({id, name, n_layers, n_heads, ..., default}). */
export async function getModels() {
  const body = await requestJson('/api/v1/models');
  return body.models;
}

/**
 * POST /api/v1/attention.
 * @param {{text: string, text_pair?: string|null, model?: string|null,
 *          layers?: number[]|null, heads?: number[]|null}} request
 * @returns {Promise<{model: string, tokens: Array<{text: string, start: number|null,
 *   end: number|null, special: boolean, segment: number}>, layers: number[], heads: number[],
 *   attention: number[][][][]}>} attention is (layer, head, query, key)
 */
export function getAttention({ text, text_pair = null, model = null, layers = null, heads = null }) {
  return requestJson('/api/v1/attention', postJson({ text, text_pair, model, layers, heads }));
}

/**
 * POST /api/v1/attention?encoding=u16: the same maps in two bytes a weight (error at most 7.7e-6).
 * `edit` ({layer, heads, temperature, hidden_keys, ablate}, or null) recomputes that layer's heads and every
 * later layer with the edit (sent only when given).
 * @returns {Promise<{header: object, maps: Float32Array[][]}>} header holds tokens, layers, heads, shape
 */
export function getAttentionCompact({ text, text_pair = null, model = null, layers = null, heads = null, edit = null }) {
  return requestCompact('/api/v1/attention', { text, text_pair, model, layers, heads, ...(edit ? { edit } : {}) });
}

/**
 * POST /api/v1/attention/summary?encoding=u16: every map max-pooled to at most size x size, for
 * overviews (display summaries: rows no longer sum to 1; header.bins gives each cell's token range);
 * `edit` as for getAttentionCompact.
 * @returns {Promise<{header: object, maps: Float32Array[][]}>}
 */
export function getSummaryCompact({ text, text_pair = null, model = null, size = 64, edit = null }) {
  return requestCompact('/api/v1/attention/summary', { text, text_pair, model, size, ...(edit ? { edit } : {}) });
}

/**
 * POST /api/v1/trace: every step of one layer's attention, for one head (or all: head null).
 * @param {{text: string, text_pair?: string|null, model?: string|null, layer: number, head?: number|null}} request
 * @returns {Promise<{model: string, tokens: Array<{text: string, start: number|null, end: number|null,
 *   special: boolean, segment: number}>, layer: number, d_model: number, n_heads: number, d_head: number,
 *   heads: number[], scale: number, steps: object}>} per-head steps are indexed like `heads`
 */
export function getTrace({ text, text_pair = null, model = null, layer, head = null }) {
  return requestJson('/api/v1/trace', postJson({ text, text_pair, model, layer, head }));
}

/**
 * POST /api/v1/trace?encoding=f32: the same answer as getTrace (the very same numbers, hidden entries null),
 * sent as float32 arrays: 4 bytes a number instead of about 20, and nothing for the browser to parse.
 */
export function getTraceCompact({ text, text_pair = null, model = null, layer, head = null, block = true }) {
  return requestCompact('/api/v1/trace', { text, text_pair, model, layer, head, block }, 'f32', decodeTraceF32);
}

/**
 * POST /api/v1/toy: the worked example ({}), or small hand-made queries/keys/values/weights.
 * @param {{queries?: unknown[][], keys?: unknown[][], values?: unknown[][], n_heads?: unknown,
 *          weights?: {q?: unknown[][], k?: unknown[][], v?: unknown[][], o?: unknown[][]},
 *          causal?: boolean}} body sent as given: the server says what is wrong with it
 * @returns {Promise<{d_model: number, n_heads: number, d_head: number, scale: number, steps: object}>}
 *   steps as in /trace (all heads), except steps.input = {q, k, v}
 */
export function getToy(body = {}) {
  return requestJson('/api/v1/toy', postJson(body));
}

/**
 * GET /api/v1/positions: a positional encoding's table.
 * @param {{kind: 'sinusoidal'|'rope'|'alibi'|'learned', length?: number, d_model?: number|null,
 *          n_heads?: number, model?: string|null}} query
 * @returns {Promise<{kind: string, length: number, d_model: number, matrix: number[][]|null,
 *   angles: number[][]|null, bias: number[][][]|null, slopes: number[]|null}>}
 */
export function getPositions({ kind, length = 64, d_model = null, n_heads = 8, model = null }) {
  const params = new URLSearchParams({ kind, length: String(length), n_heads: String(n_heads) });
  if (d_model !== null) params.set('d_model', String(d_model));
  if (model !== null) params.set('model', model);
  return requestJson(`/api/v1/positions?${params}`);
}

// ---- the Iris transformer (/iris) ----

/**
 * GET /api/v1/iris/data: the 150 flowers, their species and the fixed 120/30 split.
 * @returns {Promise<{features: string[], classes: string[], rows: number[][], labels: number[],
 *   train: number[], test: number[], mean: number[], std: number[]}>} rows in cm; train and test
 *   are row indices
 */
export function getIrisData() {
  return requestJson('/api/v1/iris/data');
}

/**
 * POST <train>: start a training job of a lab (/api/v1/iris/train, /api/v1/labs/induction/train). A refusal
 * is an ApiError; when the server is busy (429) it carries `retryAfter`, the seconds its Retry-After header
 * names (or null).
 * @param {string} train the lab's train URL
 * @param {object} settings the lab's settings
 * @returns {Promise<{job: string, events: string}>} events: the URL of the job's event stream
 */
export async function startTraining(train, settings) {
  let response;
  try {
    response = await fetch(train, { ...postJson(settings), headers: { Accept: 'application/json', 'Content-Type': 'application/json' } });
  } catch {
    throw new ApiError(0, 'unreachable');
  }
  const body = await parseJson(response);
  if (!response.ok) {
    const error = new ApiError(response.status, 'http', detailOf(body), body);
    const retry = Number.parseInt(response.headers.get('Retry-After') ?? '', 10); // ui-text: not UI (a header name)
    error.retryAfter = Number.isFinite(retry) ? retry : null;
    throw error;
  }
  if (body === null) throw new ApiError(response.status, 'not-json');
  return body;
}

/** The URL of a training job's event stream (text/event-stream, for EventSource). */
export const trainingEventsUrl = (train, job) => `${train}/${encodeURIComponent(job)}/events`;

/** DELETE <train>/{job}: stop a training job (204; 404 when the server does not know it). */
export async function stopTraining(train, job) {
  await send(`${train}/${encodeURIComponent(job)}`, { method: 'DELETE' });
}

export const IRIS_TRAIN = '/api/v1/iris/train';
export const INDUCTION_TRAIN = '/api/v1/labs/induction/train';

/**
 * POST /api/v1/labs/seq2seq/predict: a job's encoder-decoder (after its latest evaluation) on a text.
 * @returns {Promise<{output: string, alignment: {source: string[], target: string[], weights: number[][]|null},
 *   step: number, task: string, attention: boolean}>}
 */
export function predictSeq2seq(body) {
  return requestJson('/api/v1/labs/seq2seq/predict', postJson(body));
}

/** POST /api/v1/iris/train, with {epochs, lr, optimizer, batch, seed, watch}. */
export const startIrisTraining = (settings) => startTraining(IRIS_TRAIN, settings);
export const irisEventsUrl = (job) => trainingEventsUrl(IRIS_TRAIN, job);
export const stopIrisTraining = (job) => stopTraining(IRIS_TRAIN, job);

/**
 * POST /api/v1/iris/predict: a job's model (at its last finished epoch) on four measurements.
 * @param {{job: string, features: number[]}} body features in cm
 * @returns {Promise<{classes: string[], probabilities: number[], predicted: string|number,
 *   epoch: number, trace: object}>} trace shaped like a /api/v1/toy answer (the attention layer)
 */
export function predictIris(body) {
  return requestJson('/api/v1/iris/predict', postJson(body));
}

/**
 * GET /api/v1/cost: parameters, memory and FLOPs of one attention layer and of L layers, each with its
 * formula filled in, and one layer's memory against S (`curve`), for standard attention, FlashAttention
 * and the KV cache.
 * @param {{d_model: number, n_heads: number, n_kv_heads?: number, seq_len: number, batch: number,
 *          n_layers: number, bytes: number, bias: boolean}} sizes n_kv_heads left out: n_heads (multi-head)
 * @returns {Promise<{sizes: object, per_layer: Object<string, {value: number, formula: string, filled: string}>,
 *   total: Object<string, number>, curve: {seq_len: number[], attention_matrix_bytes: number[],
 *   flash_attention_bytes: number[], kv_cache_bytes: number[]}, max_exact: number}>}
 */
export function getCost({ d_model, n_heads, n_kv_heads, seq_len, batch, n_layers, bytes, bias }) {
  const params = new URLSearchParams({
    d_model: String(d_model), n_heads: String(n_heads), seq_len: String(seq_len),
    batch: String(batch), n_layers: String(n_layers), bytes: String(bytes), bias: String(bias),
  });
  if (n_kv_heads !== undefined && n_kv_heads !== null) params.set('n_kv_heads', String(n_kv_heads));
  return requestJson(`/api/v1/cost?${params}`);
}

/**
 * The CPU measurements of bench/flash_sweep.py, a static file written by the benchmark (nothing runs here).
 * @returns {Promise<{machine: object, d_head: number, block: number[], naive_max_matrix_bytes: number,
 *   lengths: number[], results: Array<{method: string, n: number, seconds?: number, peak_rss_bytes?: number,
 *   refused?: string}>}>}
 */
export function getFlashSweep() {
  return requestJson('/static/data/flash-sweep.json');
}

/**
 * POST /api/v1/toy/backward: the toy's request plus `upstream` (L x d_model, default all ones).
 * @returns {Promise<{forward: object, gradients: Object<string, number[]|number[][]|number[][][]|null>,
 *   check: {max_abs_diff: number, max_rel_diff: number, bound: number, worst: string|null, compared: string[],
 *     reference: string},
 *   flow: 'softmax'|'none'|'straight_through', note: string, upstream: number[][], upstream_default: boolean}>}
 */
export function getToyBackward(body = {}) {
  return requestJson('/api/v1/toy/backward', postJson(body));
}

/**
 * POST /api/v1/flash: one head of the toy's layer through FlashAttention, tile by tile.
 * @param {object} body the toy's layer fields plus block_rows, block_cols, head, backward
 * @returns {Promise<{head: number, n_heads: number, block_rows: number, block_cols: number, scale: number,
 *   q: number[][], k: number[][], v: number[][], tiles: object[], output: number[][], reference: number[][],
 *   max_abs_diff: number, m: (number|null)[], l: number[], backward: object|null}>}
 */
export function getFlash(body = {}) {
  return requestJson('/api/v1/flash', postJson(body));
}

// ---- analysis of the real model (aggregate, metrics, contributions) ----

/**
 * POST /api/v1/aggregate: per layer the mean over heads, or attention rollout (Abnar & Zuidema 2020).
 * @param {{text: string, text_pair?: string|null, model?: string|null, kind?: 'mean'|'rollout',
 *          residual?: number}} request residual: the identity's share in rollout (0 <= residual < 1)
 * @returns {Promise<{model: string, tokens: object[], kind: string, residual: number|null,
 *   layers: number[], maps: number[][][]}>} maps is (layer, query, key)
 */
export function getAggregate({ text, text_pair = null, model = null, kind = 'mean', residual = 0.5 }) {
  return requestJson('/api/v1/aggregate', postJson({ text, text_pair, model, kind, residual }));
}

/**
 * POST /api/v1/metrics: per layer and head entropy, distance and the shares to [CLS], [SEP], self,
 * the previous and next token and punctuation, plus labels from stated thresholds.
 * @param {{text: string, text_pair?: string|null, model?: string|null}} request
 * @returns {Promise<{model: string, tokens: object[], n_layers: number, n_heads: number,
 *   metrics: Object<string, number[][]>, labels: string[][][],
 *   thresholds: Object<string, {metric: string, op: string, value: number}>, source: string}>}
 *   metrics[name][layer][head]; labels[layer][head] is a list of label names
 */
export function getMetrics({ text, text_pair = null, model = null }) {
  return requestJson('/api/v1/metrics', postJson({ text, text_pair, model }));
}

/**
 * POST /api/v1/contributions: Kobayashi et al. 2020's norms ||a_ij f_h(x_j)|| per head, and per
 * layer the norm of the sum over heads.
 * @param {{text: string, text_pair?: string|null, model?: string|null,
 *          layers?: number[]|null, heads?: number[]|null}} request
 * @returns {Promise<{model: string, tokens: object[], layers: number[], heads: number[],
 *   contributions: number[][][][], layer_sum: number[][][]}>} contributions is (layer, head, query,
 *   key); layer_sum is (layer, query, key) over all heads of the layer
 */
export function getContributions({ text, text_pair = null, model = null, layers = null, heads = null }) {
  return requestJson('/api/v1/contributions', postJson({ text, text_pair, model, layers, heads }));
}

/**
 * POST /api/v1/lens: the logit lens of one position, for a model with an LM head (`lm_head` in /models):
 * each layer's residual stream (the embeddings first) through the final LayerNorm and the LM head.
 * @param {{text: string, text_pair?: string|null, model?: string|null, position?: number|null, top_k?: number}} request
 *   position null: the last token
 * @returns {Promise<{model: string, tokens: object[], position: number, top_k: number, layers: {layer: string|number,
 *   predictions: {id: number, token: string, display: string, probability: number, logit: number}[]}[]}>}
 *   layers: "embeddings", then 0 … n_layers − 1
 */
export function getLens({ text, text_pair = null, model = null, position = null, top_k = 5 }) {
  return requestJson('/api/v1/lens', postJson({ text, text_pair, model, position, top_k }));
}

/**
 * POST /api/v1/generate: continue a text with a model that has an LM head, token by token. A refusal (4xx,
 * before the stream) is an ApiError; otherwise the answer, whose body is the text/event-stream to read
 * (sse.js readEventStream): `prompt`, one `token` per new token, `done`. Aborting `signal` ends the request,
 * and the server stops generating.
 * @param {{text: string, model?: string|null, max_new_tokens: number, temperature: number, top_k: number,
 *   top_p: number, seed: number}} body
 * @param {AbortSignal} [signal]
 * @returns {Promise<Response>}
 */
export function startGenerate(body, signal) {
  return send('/api/v1/generate', { ...postJson(body), signal }, 'text/event-stream');
}

/**
 * POST /api/v1/patch: activation patching from `clean` into `corrupted` (the same token count); `answer` [good, bad]
 * (token ids or texts of one token) for a model with an LM head, null for an encoder.
 * @param {{clean: string, corrupted: string, model?: string|null, target: 'heads'|'residual',
 *   answer?: Array<number|string>|null}} body
 */
export function getPatch({ clean, corrupted, model = null, target = 'heads', answer = null }) {
  const body = { clean, corrupted, model, target };
  if (answer !== null) body.answer = answer;
  return requestJson('/api/v1/patch', postJson(body));
}

/**
 * POST /api/v1/attribution: per token gradient × input or integrated gradients of one output (a token id's
 * next-token logit for a model with an LM head, the cosine similarity to a second text's pooled embedding for an
 * encoder), beside the last layer's attention, rollout and contributions, with each one's Spearman ρ.
 * @param {{text: string, model?: string|null, target: number|string, method: string, steps: number}} body
 */
export function getAttribution(body) {
  return requestJson('/api/v1/attribution', postJson(body));
}

/**
 * POST /api/v1/edit/effect: what a what-if edit changes (each later layer's rows, the final hidden state, the
 * next token of a model with an LM head) and, for a ProbSparse edit, the active queries of each edited head.
 * @param {{text: string, text_pair?: string|null, model?: string|null, edit: object}} body
 */
export function getEditEffect(body) {
  return requestJson('/api/v1/edit/effect', postJson(body));
}

/**
 * POST /api/v1/logit-attribution: direct logit attribution of `answer` ([id] or [good, bad]) at `position` (null:
 * the last token), for a model with an LM head: heads [layer][head], mlp [layer], attention_bias, embeddings, ….
 * @param {{text: string, model?: string|null, answer: number[], position?: number|null}} body
 */
export function getLogitAttribution({ text, model = null, answer, position = null }) {
  return requestJson('/api/v1/logit-attribution', postJson({ text, model, answer, position }));
}

/**
 * POST /api/v1/attribution/continuation: each token of a continuation ({new_tokens} generated greedily, or {ids})
 * attributed to every token before it by integrated gradients of its log-probability; rows with completeness.
 * @param {{text: string, model?: string|null, continuation: {new_tokens: number}|{ids: number[]}, steps?: number,
 *   baseline?: string}} body
 */
export function getContinuationAttribution(body) {
  return requestJson('/api/v1/attribution/continuation', postJson(body));
}

/** POST /api/v1/token: the vocabulary id of a text that is one token ({model, id, token, display}); 422 else. */
export function getSingleToken({ text, model = null }) {
  return requestJson('/api/v1/token', postJson({ text, model }));
}

// ---- an RNN, a convolution stack and self-attention side by side (/sequence) ----

/**
 * POST /api/v1/sequence/reach: ‖∂y_{N−1} / ∂x_j‖ for each input position j in a GRU, a causal convolution
 * stack and causal self-attention of width d, and the stack's receptive field after each layer.
 * @param {{length: number, d: number, kernel: number, dilated: boolean, layers: number, seed?: number}} body
 * @returns {Promise<{length: number, d: number, kernel: number, dilated: boolean, layers: number, seed: number,
 *   rnn: number[], conv: number[], attention: number[], receptive_field: number[], rnn_path: number[],
 *   conv_path: number[], attention_path: number[], sequential: Object<string, number>}>}
 */
export function getSequenceReach(body) {
  return requestJson('/api/v1/sequence/reach', postJson(body));
}

/**
 * The CPU measurements of bench/sequence_sweep.py, a static file written by the benchmark (nothing runs here).
 * @returns {Promise<{machine: object, d: number, kernel: number, formulas: object, lengths: number[],
 *   conv_layers: Object<string, number>, results: Array<{kind: string, phase: string, n: number,
 *   seconds?: number, peak_rss_bytes?: number, skipped?: string}>, measured_crossings: object[]}>}
 */
export function getSequenceSweep() {
  return requestJson('/static/data/sequence-sweep.json');
}

export const INFORMER_TRAIN = '/api/v1/labs/informer/train';
export const GLIMPSE_TRAIN = '/api/v1/labs/glimpse/train';

/**
 * POST /api/v1/labs/informer/watch: a job's network (after its latest evaluation) on one test window.
 * @returns {Promise<{step: number, series: string, attention: string, index: number, windows: number, start: number,
 *   times: number[], history: number[], truth: number[], forecast: number[], naive: number[],
 *   layers: Array<{length: number, weights: number[][][], measure: number[][]|null, active: number[][]|null}>}>}
 */
export function watchInformer(body) {
  return requestJson('/api/v1/labs/informer/watch', postJson(body));
}

/**
 * GET /api/v1/labs/informer/series: the series the lab forecasts, with their test windows at a window and horizon.
 * @returns {Promise<{window: number, horizon: number, series: Array<{name: string, unit: string, season: number,
 *   step_label: string, values: number, first: number, last: number, test_windows: number|null}>}>}
 */
export function getInformerSeries({ window, horizon }) {
  return requestJson(`/api/v1/labs/informer/series?${new URLSearchParams({ window: String(window), horizon: String(horizon) })}`);
}

/**
 * The CPU measurements of bench/informer.py, a static file written by the benchmark (nothing runs here).
 * @returns {Promise<{machine: string, threads: number, heads: number, d_model: number, factor: number,
 *   lengths: number[], full: {seconds: number[], peak_mb: number[]}, probsparse: {seconds: number[],
 *   peak_mb: number[]}, crossover: number|null, seeds: object[]}>}
 */
export function getInformerSweep() {
  return requestJson('/static/data/informer-sweep.json');
}
