// Word view and hidden special tokens, for any tokenizer: pure functions on the API's tokens (their
// character offsets into the text or the pair) and on attention matrices (rows = queries).
//
// A word is a run of consecutive tokens of one segment whose offsets touch (one ends where the next
// starts) with a letter, digit or mark on both sides of the seam: "un ##bel ##ie ##va ##bly" or
// "Ġtoken izers" are one word each, while whitespace, punctuation ("mat" + ".") and the characters of
// unsegmented scripts (Han, kana, Thai: a tokenizer splits them one a token) start a new word. An
// apostrophe between letters and a point or comma between digits count as letters there, as a reader
// takes them: WordPiece's "didn ' t" and byte-level BPE's "Ġdidn 't" are the word "didn't", "3 . 14" is
// "3.14"; a quote mark ("'hello'") or a full stop after a number ("in 2020.") stays apart.
// A token whose offsets overlap the word before it holds more bytes of that word's last character
// (byte-level BPE splits "我" into three tokens with the same offsets) and joins it whatever the script.
// Special tokens ([CLS], [SEP], <s>, …) are words of their own.

const WORD_CHAR = /[\p{L}\p{N}\p{M}]/u;
const UNSEGMENTED = /[\p{Script=Han}\p{Script=Hiragana}\p{Script=Katakana}\p{Script=Thai}\p{Script=Lao}\p{Script=Khmer}\p{Script=Myanmar}]/u;
// Inside a word, as a reader takes it, though not a letter: an apostrophe between letters ("didn't",
// "o'clock", "l'homme"), a decimal point or thousands separator between digits ("3.14", "1,000").
const APOSTROPHE = /^['\u2019]$/u;
const SEPARATOR = /^[.,]$/u;
const DIGIT = /^\p{Nd}$/u;

const hasOffsets = (token) => !token.special && Number.isInteger(token.start) && Number.isInteger(token.end)
  && token.end > token.start;

/** The character (code point) of `source` that ends at `at`, and the one that starts there. */
const charBefore = (source, at) => Array.from(source.slice(Math.max(0, at - 2), at)).pop();
const charAt = (source, at) => (at < source.length ? String.fromCodePoint(source.codePointAt(at)) : undefined);

const letter = (char) => char !== undefined && WORD_CHAR.test(char) && !UNSEGMENTED.test(char);

/** Whether the character `char` at `at` of `source` is part of a word (an inner apostrophe or separator too). */
function inWord(source, at, char) {
  if (char === undefined) return false;
  const [before, after] = [charBefore(source, at), charAt(source, at + char.length)];
  if (APOSTROPHE.test(char)) return letter(before) && letter(after);
  if (SEPARATOR.test(char)) return DIGIT.test(before ?? '') && DIGIT.test(after ?? '');
  return letter(char);
}

/** Whether the character before `at` and the one at `at` of `source` are inside one word. */
function joins(source, at) {
  const before = charBefore(source, at);
  return before !== undefined && inWord(source, at - before.length, before) && inWord(source, at, charAt(source, at));
}

/**
 * The words of a tokenized input.
 * @param {Array<{text: string, display?: string, start: number|null, end: number|null, special: boolean,
 *   segment: number, unknown?: boolean}>} tokens the API's tokens (offsets into `text` for segment 0,
 *   into `textPair` for segment 1)
 * @param {string} text
 * @param {string|null} [textPair]
 * @returns {{words: Array<{text: string, display: string, start: number|null, end: number|null,
 *   special: boolean, segment: number, unknown: boolean, pieces: number[]}>}} `pieces` are token indices;
 *   `unknown`: one of its pieces is the model's unknown token
 */
export function mergeWords(tokens, text, textPair = null) {
  const sources = [text ?? '', textPair ?? ''];
  const words = [];
  let last = null; // the word the previous token belongs to, if it can continue
  tokens.forEach((token, index) => {
    const source = sources[token.segment] ?? '';
    if (
      last && hasOffsets(token) && last.segment === token.segment
      && (token.start < last.end || (last.end === token.start && joins(source, token.start)))
    ) {
      last.pieces.push(index);
      last.end = Math.max(last.end, token.end);
      last.unknown ||= Boolean(token.unknown);
      last.text = source.slice(last.start, last.end);
      last.display = last.text;
      return;
    }
    const own = hasOffsets(token) ? source.slice(token.start, token.end) : null;
    const word = {
      text: own ?? token.text,
      display: own ?? token.display ?? token.text,
      start: hasOffsets(token) ? token.start : null,
      end: hasOffsets(token) ? token.end : null,
      special: Boolean(token.special),
      segment: token.segment,
      unknown: Boolean(token.unknown),
      pieces: [index],
    };
    words.push(word);
    last = hasOffsets(token) ? word : null;
  });
  return { words };
}

/**
 * A token matrix (rows = queries, columns = keys) as a word matrix: entry (a, b) is the mean over
 * word a's query pieces of the sum over word b's key pieces. Rows that summed to 1 still do.
 * @param {ArrayLike<ArrayLike<number>>} matrix N x N rows
 * @param {Array<{pieces: number[]}>} words from mergeWords
 * @returns {number[][]} W x W
 */
export function wordMatrix(matrix, words) {
  const owner = [];
  words.forEach((word, w) => { for (const piece of word.pieces) owner[piece] = w; });
  const count = words.length;
  return words.map((word) => {
    const row = new Array(count).fill(0);
    for (const q of word.pieces) {
      const source = matrix[q];
      for (let k = 0; k < source.length; k += 1) row[owner[k]] += source[k];
    }
    for (let b = 0; b < count; b += 1) row[b] /= word.pieces.length;
    return row;
  });
}

/**
 * The matrix without the rows and columns of special tokens (or special words), each row
 * renormalised to sum to 1 over what is left; a row with nothing left becomes zeros.
 * @param {ArrayLike<ArrayLike<number>>} matrix N x N rows
 * @param {Array<{special: boolean}>} tokens tokens or words, one per row
 * @returns {{matrix: number[][], kept: number[]}} kept: the indices of the rows (and columns) kept
 */
export function hideSpecial(matrix, tokens) {
  const kept = [];
  tokens.forEach((token, index) => { if (!token.special) kept.push(index); });
  const out = kept.map((q) => {
    const source = matrix[q];
    const row = kept.map((k) => source[k]);
    const total = row.reduce((sum, value) => sum + value, 0);
    return total > 0 ? row.map((value) => value / total) : row.map(() => 0);
  });
  return { matrix: out, kept };
}
