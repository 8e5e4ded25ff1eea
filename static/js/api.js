// Fetch wrappers for the attnscope REST API (/api/v1). Every non-2xx answer
// becomes an ApiError whose message is the server's `detail`.

export class ApiError extends Error {
  /**
   * @param {number} status HTTP status, or 0 when the server could not be reached
   * @param {string} message the server's `detail` (or a description of what went wrong)
   * @param {unknown} [body] the parsed JSON body, if any
   */
  constructor(status, message, body = null) {
    super(message);
    this.name = 'ApiError';
    this.status = status;
    this.body = body;
  }
}

function detailOf(body, response) {
  const detail = body && typeof body === 'object' ? body.detail : undefined;
  if (typeof detail === 'string' && detail.trim()) return detail;
  if (Array.isArray(detail) && detail.length) {
    return detail.map((item) => (item && typeof item.msg === 'string' ? item.msg : String(item))).join('; ');
  }
  return `The server answered ${response.status} ${response.statusText}`.trim() + '.';
}

async function requestJson(path, init = {}) {
  let response;
  try {
    response = await fetch(path, {
      ...init,
      headers: { Accept: 'application/json', ...(init.headers || {}) },
    });
  } catch (error) {
    if (error && error.name === 'AbortError') throw error;
    throw new ApiError(0, 'Could not reach the attnscope server. Is it still running?');
  }
  const raw = await response.text();
  let body = null;
  try {
    body = raw ? JSON.parse(raw) : null;
  } catch {
    body = null;
  }
  if (!response.ok) throw new ApiError(response.status, detailOf(body, response), body);
  if (body === null) throw new ApiError(response.status, 'The server sent an answer that is not JSON.');
  return body;
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
  return requestJson('/api/v1/attention', {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ text, text_pair, model, layers, heads }),
  });
}

/**
 * POST /api/v1/trace: every step of one layer's attention, for one head (or all: head null).
 * @param {{text: string, text_pair?: string|null, model?: string|null, layer: number, head?: number|null}} request
 * @returns {Promise<{model: string, tokens: Array<{text: string, start: number|null, end: number|null,
 *   special: boolean, segment: number}>, layer: number, d_model: number, n_heads: number, d_head: number,
 *   heads: number[], scale: number, steps: object}>} per-head steps are indexed like `heads`
 */
export function getTrace({ text, text_pair = null, model = null, layer, head = null }) {
  return requestJson('/api/v1/trace', {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ text, text_pair, model, layer, head }),
  });
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
  return requestJson('/api/v1/toy', {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify(body),
  });
}
