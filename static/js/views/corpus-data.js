// GET requests of the corpus index's routes (/api/v1/corpus…), each failure an ApiError carrying the server's
// `detail` and body, as static/js/api.js makes them for the other routes.
import { ApiError } from '../api.js';

async function getJson(path) {
  let response;
  try {
    response = await fetch(path, { headers: { Accept: 'application/json' } });
  } catch {
    throw new ApiError(0, 'unreachable');
  }
  const raw = await response.text();
  let body = null;
  try {
    body = raw ? JSON.parse(raw) : null;
  } catch {
    body = null;
  }
  if (!response.ok) {
    const detail = body && typeof body.detail === 'string' ? body.detail.trim() : '';
    throw new ApiError(response.status, 'http', detail, body);
  }
  if (body === null) throw new ApiError(response.status, 'not-json');
  return body;
}

/** GET /api/v1/corpus: {model, n_layers, n_heads, texts, skipped, metrics}. */
export const getCorpus = () => getJson('/api/v1/corpus');

/** GET /api/v1/corpus/top: one head's k texts by a metric, highest (or lowest) first. */
export function getTopTexts({ layer, head, by, k, lowest }) {
  const params = new URLSearchParams({ layer: String(layer), head: String(head), by, k: String(k) });
  if (lowest) params.set('lowest', 'true');
  return getJson(`/api/v1/corpus/top?${params}`);
}

/** GET /api/v1/corpus/pattern: one head's k texts whose strongest pairs go from a `query` match to a `key` match. */
export function getPatternTexts({ layer, head, query, key, k }) {
  const params = new URLSearchParams({ layer: String(layer), head: String(head), query, key, k: String(k) });
  return getJson(`/api/v1/corpus/pattern?${params}`);
}

/** GET /api/v1/corpus/heads: every head's mean of two metrics. */
export function getHeads({ x, y }) {
  return getJson(`/api/v1/corpus/heads?${new URLSearchParams({ x, y })}`);
}
