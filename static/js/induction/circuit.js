// The induction-head lab's numbers as the page states them (/induction), from its `eval` events: when the
// repeated half's loss dropped, which heads form the two-step circuit, and what the watched sequence's own
// maps show at one position. Pure: no DOM; the page's sentences are filled from these numbers only.

/** A head scoring at least this counts as a previous-token head or an induction head (the lab's target). */
export const SCORE_GOAL = 0.6;

/** ln(vocab): the loss, in nats, of a uniform guess among the vocabulary's tokens. */
export const uniformLoss = (vocab) => Math.log(vocab);

/** The first eval whose repeated half's loss is below half of ln(vocab) (the drop), or null. */
export function dropOf(evals, vocab) {
  return evals.find((e) => e.loss_repeated_half < uniformLoss(vocab) / 2) ?? null;
}

/** The head with the largest score among `layers` (ties: the first), as {layer, head, score}. */
function strongest(scores, layers) {
  let best = null;
  for (const layer of layers) {
    scores[layer].forEach((score, head) => {
      if (best === null || score > best.score) best = { layer, head, score };
    });
  }
  return best;
}

const range = (from, to) => Array.from({ length: Math.max(0, to - from) }, (_, i) => from + i);

/**
 * The circuit in an eval: the strongest induction head of the layers after the first, and the strongest
 * previous-token head of the layers before it; `formed` when both score at least SCORE_GOAL. null for a
 * one-layer network (nothing after a layer can read what it wrote).
 */
export function circuitOf(event) {
  const layers = event.induction.length;
  if (layers < 2) return null;
  const induction = strongest(event.induction, range(1, layers));
  const previous = strongest(event.previous_token, range(0, induction.layer));
  return { previous, induction, formed: previous.score >= SCORE_GOAL && induction.score >= SCORE_GOAL };
}

/** The largest weight of a row and where it is (ties: the first). */
function peak(row) {
  let at = 0;
  row.forEach((w, k) => {
    if (w > row[at]) at = k;
  });
  return { at, weight: row[at] };
}

/**
 * What the watched sequence (R R, R of half = T/2 tokens) shows at the query q = half + ⌊(half − 1)/2⌋, a token
 * of the second R: its earlier occurrence is at j = q − half and the token after that one at next = j + 1, the
 * same token that follows q (at q + 1). The previous-token head's weight at `next` on j, the induction head's
 * weight at q on `next`, and where each of the two rows has its largest weight.
 */
export function evidenceOf(event, circuit) {
  const tokens = event.tokens;
  const half = tokens.length / 2;
  const q = half + Math.floor((half - 1) / 2);
  const j = q - half;
  const next = j + 1;
  const previousRow = event.maps[circuit.previous.layer][circuit.previous.head][next];
  const inductionRow = event.maps[circuit.induction.layer][circuit.induction.head][q];
  return {
    q, j, next,
    token: tokens[q], // the same token at j
    following: tokens[next], // the same token at q + 1
    previous: { weight: previousRow[j], peak: peak(previousRow) },
    induction: { weight: inductionRow[next], peak: peak(inductionRow) },
  };
}
