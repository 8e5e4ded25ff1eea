// ProbSparse (Informer) on /toy: the numbers its step captions state, read from the answer's
// `probsparse` ({sampled_keys [L][U], measure [h][L], active [h][u], output_difference [L]}) and its
// steps, never worked out from the request. Pure: no DOM.

const ZERO = 1e-12; // an output difference at or below this is float64 rounding: the query's output did not change

const fixed = (x) => Number(x).toFixed(4);
const names = (prefix, indices) => indices.map((i) => `${prefix}${i}`).join(', ');

/** Whether every query is active in every head (u ≥ L): ProbSparse is then full attention. */
export function isFullAttention(T) {
  const sparse = T.probsparse;
  return Boolean(sparse) && sparse.active.every((rows) => rows.length >= sparse.measure[0].length);
}

/**
 * The step captions' placeholders for `head` and the shown `query` (clamped to the rows):
 * factor, L, S, U, u, sampled (that query's keys), measure (its M), activeList, lazy (count), lazyList,
 * inverseS (1/S), lastLazy (the latest lazy query) and lastCount (how many values it sums under a causal
 * mask), changed (queries whose output differs from full attention), worst and worstQuery, own (the shown
 * query's difference).
 */
export function probsparseFacts(T, head, query) {
  const sparse = T.probsparse;
  const L = sparse.measure[0].length;
  const S = T.keyLabels.length;
  const h = Math.min(head, sparse.active.length - 1);
  const i = Math.min(query, L - 1);
  const active = sparse.active[h];
  const lazyRows = Array.from({ length: L }, (_, r) => r).filter((r) => !active.includes(r));
  const diffs = sparse.output_difference;
  const worstIndex = diffs.reduce((best, d, r) => (d > diffs[best] ? r : best), 0);
  const last = lazyRows.length ? lazyRows[lazyRows.length - 1] : null;
  return {
    factor: T.factor,
    L,
    S,
    U: sparse.sampled_keys[0].length,
    u: active.length,
    sampled: names('k', sparse.sampled_keys[i]),
    measure: fixed(sparse.measure[h][i]),
    activeList: names('q', active),
    lazy: lazyRows.length,
    lazyList: names('q', lazyRows),
    inverseS: fixed(1 / S),
    lastLazy: last === null ? '' : `q${last}`,
    lastCount: last === null ? 0 : last + 1,
    changed: diffs.filter((d) => d > ZERO).length,
    worst: fixed(diffs[worstIndex]),
    worstQuery: `q${worstIndex}`,
    own: fixed(diffs[i]),
  };
}

/** Which telling of `step` is true for ProbSparse's answer `T`, or null for the plain one. */
export function probsparseVariant(T, step) {
  const full = isFullAttention(T);
  switch (step) {
    case 'scores': return 'probsparse';
    case 'softmax':
      if (full) return 'probsparseFull';
      return T.causal ? 'probsparseCausal' : 'probsparse';
    case 'weighted_sum':
      if (full) return null;
      return T.causal ? 'probsparseCausal' : 'probsparse';
    case 'output': return full ? 'probsparseFull' : 'probsparse';
    default: return null;
  }
}
