// The explorer's "Continue this text" as data: the settings a user typed checked against the server's
// rules (app/schemas/generate.py), one run of POST /api/v1/generate built up from its events, the map that
// grows by one row per new token, and the KV cache's numbers. Pure: no DOM, no fetch.

export const MAX_NEW_TOKENS = 256; // the server's most per request
export const DEFAULT_NEW_TOKENS = 20;
export const MAX_SEED = 2 ** 31 - 1;
// Bytes a number of the cache takes: it holds keys and values in the model's dtype (the prompt event's).
export const DTYPE_BYTES = { float32: 4, bfloat16: 2 };

/** How many tokens may be added to an input of `inputTokens` for a model taking `limit` tokens: 0 when none. */
export function room(limit, inputTokens) {
  return Math.max(0, Math.min(MAX_NEW_TOKENS, limit - inputTokens));
}

const INTEGER = /^\s*\d+\s*$/;
const NUMBER = /^\s*(\d+(\.\d*)?|\.\d+)([eE][-+]?\d+)?\s*$/;

/**
 * The request body for the settings as typed (strings), or the first field that is wrong and why.
 * Top-k, top-p and the seed are only read when sampling (temperature above 0).
 * @param {{maxNew: string, temperature: string, topK: string, topP: string, seed: string}} typed
 * @param {number} most room() for this input
 * @returns {{body: {max_new_tokens: number, temperature: number, top_k: number, top_p: number, seed: number}}
 *   | {error: {field: string, key: string, values: object}}} key: an i18n key under generate.invalid.
 */
export function readSettings(typed, most) {
  const wrong = (field, key, values = {}) => ({ error: { field, key: `generate.invalid.${key}`, values } });
  if (!INTEGER.test(typed.maxNew) || Number(typed.maxNew) < 1 || Number(typed.maxNew) > most) {
    return wrong('maxNew', 'maxNew', { most });
  }
  if (!NUMBER.test(typed.temperature) || Number(typed.temperature) > 100) return wrong('temperature', 'temperature');
  const body = {
    max_new_tokens: Number(typed.maxNew), temperature: Number(typed.temperature), top_k: 0, top_p: 1, seed: 0,
  };
  if (body.temperature === 0) return { body };
  if (!INTEGER.test(typed.topK) || Number(typed.topK) > 1_000_000) return wrong('topK', 'topK');
  const p = Number(typed.topP);
  if (!NUMBER.test(typed.topP) || !(p > 0 && p <= 1)) return wrong('topP', 'topP');
  if (!INTEGER.test(typed.seed) || Number(typed.seed) > MAX_SEED) return wrong('seed', 'seed', { most: MAX_SEED });
  return { body: { ...body, top_k: Number(typed.topK), top_p: p, seed: Number(typed.seed) } };
}

/** True when the settings sample (temperature above 0); false: greedy, the same tokens every time. */
export const samples = (body) => body.temperature > 0;

/**
 * One run, built up by applyEvent from the stream's events.
 * @param {object} body what was sent (readSettings' body)
 */
export function createRun(body) {
  return { body, prompt: null, tokens: [], done: null, stopped: null };
}

/**
 * Add one event ({event, data} with data parsed) to a run; returns the run. An event out of order or not
 * known is an error: the stream is not what this page expects.
 */
export function applyEvent(run, name, data) {
  if (name === 'prompt' && run.prompt === null) {
    run.prompt = data;
  } else if (name === 'token' && run.prompt !== null && run.done === null) {
    const expected = run.prompt.tokens.length + run.tokens.length;
    if (data.index !== expected) throw new Error(`out-of-order:${data.index}:${expected}`);
    run.tokens.push(data);
  } else if (name === 'done' && run.prompt !== null && run.done === null) {
    run.done = data;
    run.stopped = data.stopped; // "end" or "length"
  } else {
    throw new Error(`unexpected:${name}`);
  }
  return run;
}

/** The run ended because the user stopped it (before its done event). */
export function stopRun(run) {
  if (run.done === null) run.stopped = 'user';
  return run;
}

/** The whole text after the run: the input's text and every new token's display. */
export const wholeText = (text, run) => text + run.tokens.map((token) => token.token.display).join('');

/**
 * The input's map of one head grown by the new tokens' rows: (T + k) x (T + k). An input row gets zeros
 * for the new keys (a causal model's query never sees a later token); a new token's row is its attention
 * from the stream (index + 1 keys), with zeros after it for the tokens written later.
 * @param {ArrayLike<number>[]} input the input's rows (T of T), or null when they are not known (then
 *   rows of null: nothing drawn there)
 * @param {number} inputTokens T
 * @param {Array<{attention: number[][][]}>} tokens the run's token events
 * @param {number} layer
 * @param {number} head
 */
export function grownMatrix(input, inputTokens, tokens, layer, head) {
  const n = inputTokens + tokens.length;
  const rows = [];
  for (let q = 0; q < inputTokens; q += 1) {
    const row = new Array(n).fill(input ? 0 : null);
    if (input) for (let k = 0; k < inputTokens; k += 1) row[k] = input[q][k];
    rows.push(row);
  }
  for (const token of tokens) {
    const weights = token.attention ? token.attention[layer][head] : [];
    const row = new Array(n).fill(0);
    for (let k = 0; k < weights.length; k += 1) row[k] = weights[k];
    rows.push(row);
  }
  return rows;
}

/**
 * The KV cache after a token: its bytes (from the event) and what the formula gives, and what multi-head
 * attention would need (every query head with its own keys and values).
 * @param {{n_layers: number, n_heads: number, n_kv_heads: number, d_head: number, dtype: string}} prompt
 * @param {{index: number, cache_bytes: number}} token
 */
export function cacheNumbers(prompt, token) {
  const tokens = token.index + 1;
  const { n_layers: layers, n_heads: heads, n_kv_heads: kvHeads, d_head: dHead, dtype } = prompt;
  const size = DTYPE_BYTES[dtype];
  const formula = 2 * layers * tokens * kvHeads * dHead * size;
  return {
    bytes: token.cache_bytes, formula, tokens, layers, heads, kvHeads, dHead, dtype, size,
    multiHead: (token.cache_bytes * heads) / kvHeads,
    grouped: kvHeads < heads,
    share: kvHeads / heads,
  };
}
