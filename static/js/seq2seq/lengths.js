// The encoder-decoder lab's accuracy by source length as its page states it (/seq2seq): the longest lengths of the
// evaluation set and the mean of their exact-match rates, for the run with attention and the one without. Pure.

/** How many of the longest source lengths the bottleneck sentence averages over (for reverse: 25 to 30 letters). */
export const LONGEST = 6;

/** The lengths of an eval's accuracy_by_length ({"12": 0.5, ...}) as numbers, ascending. */
export const lengthsOf = (byLength) => Object.keys(byLength).map(Number).sort((a, b) => a - b);

/**
 * The mean exact-match rate over the LONGEST longest lengths of `byLength`: {from, to, mean}, or null when there
 * are none. Each length counts once, however many examples it has (the page says so).
 */
export function longestMean(byLength) {
  const lengths = lengthsOf(byLength).slice(-LONGEST);
  if (!lengths.length) return null;
  const mean = lengths.reduce((sum, n) => sum + byLength[String(n)], 0) / lengths.length;
  return { from: lengths[0], to: lengths[lengths.length - 1], mean };
}
