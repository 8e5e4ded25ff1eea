// The attribution panel's numbers (POST /api/v1/attribution): per token the method's score beside attention,
// rollout and contributions, each as a bar scaled to its own column's largest size, and the numbers its
// captions state (completeness, the rank correlations). Pure: no DOM, no fetch.
import { tokenLabel } from './axes.js';

export const COMPARED = ['attention', 'rollout', 'contributions']; // ui-text: not UI (the answer's field names)
export const MAX_STEPS = 512; // integrated gradients' most quadrature nodes (model/analysis/attribution.py)

/** A number as the captions and cells show it: 3 significant digits, − for minus. */
export function shown(value, digits = 3) {
  if (value === null || value === undefined || !Number.isFinite(value)) return '—';
  const text = Math.abs(value) >= 1e-3 || value === 0 ? value.toPrecision(digits) : value.toExponential(digits - 1);
  return text.replace(/^-/, '\u2212');
}

/** Spearman's ρ as shown: two decimals, or null when it is undefined (one token, or constant scores). */
export function shownRho(rho) {
  return rho === null || rho === undefined ? null : rho.toFixed(2).replace(/^-/, '\u2212');
}

/** The largest absolute value of a list (1 when every value is 0, so bars have widths of 0). */
function largest(values) {
  const top = Math.max(...values.map((v) => Math.abs(v)));
  return top > 0 ? top : 1;
}

/**
 * One row per token: its label, the method's signed score and the three compared scores, each with the bar's
 * width as a fraction (0 to 1) of its column's largest absolute value; `sign` −1, 0 or 1 for the score.
 * @param {{tokens: object[], scores: number[], compared: Record<string, number[]>}} answer
 */
export function attributionRows(answer) {
  const scale = { score: largest(answer.scores) };
  for (const name of COMPARED) scale[name] = largest(answer.compared[name]);
  return answer.tokens.map((token, i) => {
    const row = {
      index: i, label: tokenLabel(token), score: answer.scores[i], sign: Math.sign(answer.scores[i]),
      widths: { score: Math.abs(answer.scores[i]) / scale.score },
    };
    for (const name of COMPARED) {
      row[name] = answer.compared[name][i];
      row.widths[name] = Math.abs(answer.compared[name][i]) / scale[name];
    }
    return row;
  });
}

/**
 * The completeness check as its caption states it: the sum, f(x) − f(baseline) and how far apart they are in
 * percent of the difference; null for gradient × input (no check).
 * @param {{sum: number, difference: number}|null} completeness
 */
export function completenessNumbers(completeness) {
  if (!completeness) return null;
  const { sum, difference } = completeness;
  const apart = difference === 0 ? (sum === 0 ? 0 : Infinity) : (Math.abs(sum - difference) / Math.abs(difference)) * 100;
  return { sum: shown(sum), difference: shown(difference), apart: Number.isFinite(apart) ? apart.toFixed(apart < 0.01 ? 3 : 2) : '∞', within: apart <= 1 }; // ui-text: not UI (infinity sign)
}

/**
 * Why an answer's ranking is not to be shown: null when completeness holds (or there is none, for gradient ×
 * input), else the message's i18n key and values: the gap with the steps to raise (up to MAX_STEPS), the gap
 * at the most steps, or a difference too small to check.
 * @param {{completeness: {sum: number, difference: number, ok: boolean, reason: string|null}|null, steps: number|null}} answer
 */
export function unreliable(answer) {
  const c = answer.completeness;
  if (!c || c.ok) return null;
  const numbers = completenessNumbers(c);
  if (c.reason === 'difference_too_small') return { key: 'attribution.unreliable.tiny', values: { difference: numbers.difference } };
  const key = answer.steps >= MAX_STEPS ? 'attribution.unreliable.gapAtMost' : 'attribution.unreliable.gap';
  return { key, values: { ...numbers, steps: answer.steps } };
}

/** The index of the token with the largest absolute score (the first of ties). */
export function strongest(scores) {
  let best = 0;
  scores.forEach((v, i) => { if (Math.abs(v) > Math.abs(scores[best])) best = i; });
  return best;
}
