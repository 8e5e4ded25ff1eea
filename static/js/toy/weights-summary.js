// What a drawn matrix of attention weights shows, read at the precision its cells are written with
// (figures/matrix.js formatCell: two decimals below 10, integers as they are): how many weights read
// 0 (0.00), how many rows read one-hot (one cell 1 or 1.00, every other 0 or 0.00), how many rows are
// exactly one-hot, and the largest weight as written. Captions are built from these counts, so they
// say what a reader can check on the heatmap beside them. Pure: no DOM.
import { formatCell } from '../figures/matrix.js';

const readsZero = (w) => Number(formatCell(w).replace('−', '-')) === 0;
const readsOne = (w) => Number(formatCell(w)) === 1;

/**
 * @param {number[][]} weights rows of attention weights (each row a query's weights over the keys)
 * @returns {{rows: number, cells: number, zeros: number, exactZeros: number, oneHot: number,
 *   exactOneHot: number, top: number, topText: string}} zeros: weights written as 0 or 0.00;
 *   oneHot: rows written one-hot; exactOneHot: rows of exact 0s and one exact 1; topText: the
 *   largest weight as its cell writes it
 */
export function weightsSummary(weights) {
  const cells = weights.flat();
  const top = cells.length ? Math.max(...cells) : 0;
  return {
    rows: weights.length,
    cells: cells.length,
    zeros: cells.filter(readsZero).length,
    exactZeros: cells.filter((w) => w === 0).length,
    oneHot: weights.filter((row) => row.filter(readsOne).length === 1 && row.every((w) => readsOne(w) || readsZero(w))).length,
    exactOneHot: weights.filter((row) => row.filter((w) => w === 1).length === 1 && row.every((w) => w === 0 || w === 1)).length,
    top,
    topText: formatCell(top),
  };
}

/**
 * Which caption of learn.c3.caption.* (or any dictionary with the same three endings) the weights
 * support: 'hard' when every row is exactly one-hot, 'soft' when no weight reads 0.00, else 'zeros'.
 */
export function weightsCaption(summary) {
  if (summary.rows > 0 && summary.exactOneHot === summary.rows) return 'hard';
  return summary.zeros === 0 ? 'soft' : 'zeros';
}
