// The explorer's downloads, each cached per sentence (and edit): the grid's pooled summaries, one
// layer's heads at full resolution (the large map and the head view), the aggregates (mean over
// heads, rollout), contribution norms and the head metrics. Maps come as rows (query, key).
import {
  getAggregate, getAttentionCompact, getContributions, getMetrics, getSummaryCompact,
} from '../api.js';
import { toRows } from '../compact.js';
import { Lru } from '../page.js';
import { editBody } from './explorer-state.js';

export const sentenceKey = (state) => JSON.stringify([state.text, state.pair, state.model]);
const editKey = (edit) => JSON.stringify(editBody(edit));
const sentence = (state) => ({ text: state.text, text_pair: state.pair, model: state.model });

const overviews = new Lru(4); // sentence|edit -> tokens and every head's pooled map
const layers = new Lru(4); // sentence|edit|layer -> {tokens, heads, maps: Float32Array per head}
const aggregates = new Lru(4); // sentence|kind -> {tokens, maps: layer -> rows}
const contributions = new Lru(8); // sentence|layer|head -> rows
const metrics = new Lru(4); // sentence -> /metrics answer

export const hasOverview = (state, edit = null) => overviews.has(`${sentenceKey(state)}|${editKey(edit)}`);

/** The grid: every head's max-pooled map (at most 64 x 64), with the edit when there is one. */
export function fetchOverview(state, edit = null) {
  return overviews.load(`${sentenceKey(state)}|${editKey(edit)}`, async () => {
    const { header, maps } = await getSummaryCompact({ ...sentence(state), edit: editBody(edit) });
    const side = header.shape[2];
    return { ...header, attention: maps.map((row) => row.map((flat) => toRows(flat, side, side))) };
  });
}

/** Every head of one layer at full resolution: maps[h] a row-major Float32Array N x N. */
export function fetchLayer(state, layer, edit = null) {
  return layers.load(`${sentenceKey(state)}|${editKey(edit)}|${layer}`, async () => {
    const { header, maps } = await getAttentionCompact({ ...sentence(state), layers: [layer], edit: editBody(edit) });
    return { tokens: header.tokens, heads: header.heads, n: header.shape[2], maps: maps[0], edited: Boolean(header.edited) };
  });
}

/** One head of a fetched layer as rows. */
export function headRows(layerMaps, head) {
  const at = layerMaps.heads.indexOf(head);
  return toRows(layerMaps.maps[at], layerMaps.n, layerMaps.n);
}

/** Mean over heads or rollout, every layer (one request per sentence and kind). */
export function fetchAggregate(state, kind) {
  return aggregates.load(`${sentenceKey(state)}|${kind}`, async () => {
    const answer = await getAggregate({ ...sentence(state), kind });
    return { tokens: answer.tokens, layers: answer.layers, maps: answer.maps };
  });
}

/** ‖a_ij f_h(x_j)‖ of one head as rows (query, key). */
export function fetchContribution(state, layer, head) {
  return contributions.load(`${sentenceKey(state)}|${layer}|${head}`, async () => {
    const answer = await getContributions({ ...sentence(state), layers: [layer], heads: [head] });
    return answer.contributions[0][0];
  });
}

/** The head metrics and labels of a sentence. */
export function fetchMetrics(state) {
  return metrics.load(sentenceKey(state), () => getMetrics(sentence(state)));
}
