// Numbers the later chapters of the learning path work out from an API answer, pure (no DOM, no fetch):
// how far apart a decoder's contexts are (where attention came from); linear attention's fixed-size state
// and the order of FlashAttention's tiles (linear attention and FlashAttention); the previous-token,
// duplicate-token and induction scores of every head on a sentence written twice (induction heads).

/** The largest difference between two rows of `rows` in any one column: 0 when every row is the same. */
export function rowSpread(rows) {
  let spread = 0;
  for (let j = 0; j < rows[0].length; j += 1) {
    const column = rows.map((row) => row[j]);
    spread = Math.max(spread, Math.max(...column) - Math.min(...column));
  }
  return spread;
}

/** Each cell (query, key) numbered by the tile that computed it, in the order computed (1, 2, …). */
export function tileOrder(tiles, rows, cols) {
  const order = Array.from({ length: rows }, () => new Array(cols).fill(0));
  tiles.forEach((tile, n) => {
    for (let i = tile.rows[0]; i < tile.rows[1]; i += 1) for (let j = tile.cols[0]; j < tile.cols[1]; j += 1) order[i][j] = n + 1;
  });
  return order;
}

/** The index of a row's largest entry (the first one on a tie). */
export const argmax = (row) => row.reduce((best, x, j) => (x > row[best] ? j : best), 0);

/** The largest |a − b| over two equally shaped matrices. */
export function maxAbsDiff(a, b) {
  let worst = 0;
  a.forEach((row, i) => row.forEach((x, j) => { worst = Math.max(worst, Math.abs(x - b[i][j])); }));
  return worst;
}

const matmul = (a, b) => a.map((row) => b[0].map((_, j) => row.reduce((s, x, k) => s + x * b[k][j], 0)));
const transpose = (m) => m[0].map((_, j) => m.map((row) => row[j]));

/** φ(x) = elu(x) + 1: x + 1 above 0, exp(x) at or below it; always > 0 (Katharopoulos et al., 2020). */
export const phi = (x) => (x > 0 ? x + 1 : Math.exp(x));

/**
 * Linear attention of one head the way it is cheap: the state φ(K)ᵀV (d_keys × d_values) and the sum
 * Σ_j φ(k_j) (d_keys) are computed once, whatever the number of keys, and each query's output is
 * φ(q)·(φ(K)ᵀV) / φ(q)·Σφ(K). Rows of q, k and v are the head's (the toy's split step), no mask.
 * @returns {{state: number[][], normaliser: number[], output: number[][]}}
 */
export function linearAttention(q, k, v) {
  const fq = q.map((row) => row.map(phi));
  const fk = k.map((row) => row.map(phi));
  const state = matmul(transpose(fk), v); // (d_keys, d_values)
  const normaliser = fk[0].map((_, i) => fk.reduce((s, row) => s + row[i], 0)); // (d_keys,)
  const output = fq.map((row) => {
    const below = row.reduce((s, x, i) => s + x * normaliser[i], 0);
    return state[0].map((_, j) => row.reduce((s, x, i) => s + x * state[i][j], 0) / below);
  });
  return { state, normaliser, output };
}

/**
 * Where a token list is one text written twice: `start`, the position of the first copy's first token,
 * and `half`, the tokens of one copy (the special tokens around them left out); null when the tokens
 * between the special ones are not two equal halves.
 * @param {{text: string, special: boolean}[]} tokens
 */
export function repeatedHalves(tokens) {
  let start = 0;
  while (start < tokens.length && tokens[start].special) start += 1;
  let end = tokens.length;
  while (end > start && tokens[end - 1].special) end -= 1;
  const length = end - start;
  if (length < 2 || length % 2 || tokens.slice(start, end).some((token) => token.special)) return null;
  const half = length / 2;
  for (let i = 0; i < half; i += 1) if (tokens[start + i].text !== tokens[start + half + i].text) return null;
  return { start, half };
}

/**
 * Every head's scores on a text written twice (model/analysis/circuits.py's definitions, and one more):
 * `previous`, the mean weight a[i][i − 1] over the queries i after the first token of the two copies;
 * `duplicate`, the mean weight a[i][i − half] over the second copy's queries (the same token the first
 * time); `induction`, the mean weight a[i][i − half + 1] over the second copy's queries (the token that
 * came right after it the first time).
 * @param {(i: number, j: number, layer: number, head: number) => number} weight a[i][j] of a head
 * @returns {{previous: number[][], duplicate: number[][], induction: number[][]}} (layer, head)
 */
export function repeatScores(weight, layers, heads, { start, half }) {
  const mean = (layer, head, rows, key) => rows.reduce((s, i) => s + weight(i, key(i), layer, head), 0) / rows.length;
  const after = Array.from({ length: 2 * half - 1 }, (_, i) => start + 1 + i);
  const second = Array.from({ length: half }, (_, i) => start + half + i);
  const grid = (rows, key) => Array.from({ length: layers }, (_, l) => Array.from({ length: heads }, (_, h) => mean(l, h, rows, key)));
  return {
    previous: grid(after, (i) => i - 1),
    duplicate: grid(second, (i) => i - half),
    induction: grid(second, (i) => i - half + 1),
  };
}

/** The (layer, head) of a grid's largest score and the score. */
export function strongest(grid) {
  let best = { layer: 0, head: 0, value: -Infinity };
  grid.forEach((row, layer) => row.forEach((value, head) => {
    if (value > best.value) best = { layer, head, value };
  }));
  return best;
}
