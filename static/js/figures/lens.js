// The logit lens table (POST /api/v1/lens) as data: one row per layer (the embeddings first), one cell
// per prediction, most probable first. Pure: no DOM, no fetch; views/explorer-lens.js draws it.
import { tokenLabel } from './axes.js';

/** "31.6%"; below 0.1 %: "2.3e-4" (a share of the whole vocabulary). */
export function formatProbability(p) {
  return p >= 0.001 ? `${(p * 100).toFixed(1)}%` : p.toExponential(1);
}

/**
 * @param {{layers: {layer: string|number, predictions: {id: number, token: string, display: string,
 *   probability: number, logit: number}[]}[]}} answer the /lens answer
 * @param {string|null} nextToken the input's own next token string (tokens[position + 1].text), null at the end
 * @returns {{columns: number, rows: {layer: string|number, cells: {id: number, token: string, text: string,
 *   probability: number, shown: string, logit: number, final: boolean, actual: boolean}[]}[]}}
 *   `text`: the display as axes.js tokenLabel shows it
 *   `final`: the model's own top prediction (the last layer's first); `actual`: the input's next token
 */
export function lensTable(answer, nextToken = null) {
  const last = answer.layers[answer.layers.length - 1];
  const finalId = last && last.predictions.length ? last.predictions[0].id : null;
  return {
    columns: Math.max(0, ...answer.layers.map((layer) => layer.predictions.length)),
    rows: answer.layers.map((layer) => ({
      layer: layer.layer,
      cells: layer.predictions.map((p) => ({
        id: p.id,
        token: p.token,
        text: tokenLabel({ text: p.token, display: p.display }),
        probability: p.probability,
        shown: formatProbability(p.probability),
        logit: p.logit,
        final: p.id === finalId,
        actual: nextToken !== null && p.token === nextToken,
      })),
    })),
  };
}
