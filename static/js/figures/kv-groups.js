// Grouped-query attention: which key-value head serves which query heads. With G key-value heads for
// H query heads (G divides H), key-value head g serves the H / G query heads g·H/G … (g + 1)·H/G − 1
// in a row (model/nets/attention.py share_heads). G = H is multi-head attention: no groups to show.
// Pure: no DOM.

/** Whether there are groups to show: fewer key-value heads than query heads. */
export function isGrouped(nHeads, nKvHeads) {
  return Number.isInteger(nKvHeads) && nKvHeads > 0 && nKvHeads < nHeads && nHeads % nKvHeads === 0;
}

/**
 * The key-value head serving query head `head`, and every query head it serves (its group, `head` included).
 * @returns {{kv: number, heads: number[], others: number[]}} others: the group without `head`
 */
export function kvGroup(head, nHeads, nKvHeads) {
  const size = isGrouped(nHeads, nKvHeads) ? nHeads / nKvHeads : 1;
  const kv = Math.floor(head / size);
  const heads = Array.from({ length: size }, (_, i) => kv * size + i);
  return { kv, heads, others: heads.filter((h) => h !== head) };
}

/**
 * The runs of neighbouring entries of `heads` (query heads in the order drawn) that one key-value head
 * serves: [{kv, start, count}], start an index into `heads`. [] without groups (multi-head attention).
 */
export function kvRuns(heads, nHeads, nKvHeads) {
  if (!isGrouped(nHeads, nKvHeads)) return [];
  const runs = [];
  heads.forEach((head, i) => {
    const { kv } = kvGroup(head, nHeads, nKvHeads);
    const last = runs[runs.length - 1];
    if (last && last.kv === kv && last.start + last.count === i) last.count += 1;
    else runs.push({ kv, start: i, count: 1 });
  });
  return runs;
}
