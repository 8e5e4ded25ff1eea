// The word view's words (static/js/figures/words.js mergeWords) as a reader takes them: an apostrophe
// between letters and a point or comma between digits are inside a word. The tokens are the ones the
// packaged MiniLM's WordPiece tokenizer gives through /api/v1/attention (text, display and offsets as
// it sent them), and GPT-2's byte-level pieces with the offsets the tokenizers library gives them.
import './browser-globals.js';
import test from 'node:test';
import assert from 'node:assert/strict';

import { mergeWords, wordMatrix } from '../../static/js/figures/words.js';

const CLS = { text: '[CLS]', display: '[CLS]', start: null, end: null, special: true, segment: 0 };
const SEP = { text: '[SEP]', display: '[SEP]', start: null, end: null, special: true, segment: 0 };
const piece = (text, start, end, display = text) => ({ text, display, start, end, special: false, segment: 0 });
const texts = (words) => words.map((word) => word.text);
const pieces = (words) => words.map((word) => word.pieces);

test('MiniLM: "didn ' + "'" + ' t" is the one word "didn\'t"', () => {
  const text = "The animal didn't cross the street.";
  const tokens = [
    CLS, piece('the', 0, 3), piece('animal', 4, 10), piece('didn', 11, 15), piece("'", 15, 16), piece('t', 16, 17),
    piece('cross', 18, 23), piece('the', 24, 27), piece('street', 28, 34), piece('.', 34, 35), SEP,
  ];
  const { words } = mergeWords(tokens, text);
  assert.deepEqual(texts(words), ['[CLS]', 'The', 'animal', "didn't", 'cross', 'the', 'street', '.', '[SEP]']);
  assert.deepEqual(words[3].pieces, [3, 4, 5]);
  assert.deepEqual([words[3].start, words[3].end, words[3].display], [11, 17, "didn't"]);
});

test('MiniLM: numbers and o\'clock join; quote marks, a comma after a word and a full stop after a number do not', () => {
  const text = "It costs 3.14 or 1,000 at 9 o'clock, 'hello' in 2020.";
  const tokens = [
    CLS, piece('it', 0, 2), piece('costs', 3, 8), piece('3', 9, 10), piece('.', 10, 11), piece('14', 11, 13),
    piece('or', 14, 16), piece('1', 17, 18), piece(',', 18, 19), piece('000', 19, 22), piece('at', 23, 25),
    piece('9', 26, 27), piece('o', 28, 29), piece("'", 29, 30), piece('clock', 30, 35), piece(',', 35, 36),
    piece("'", 37, 38), piece('hello', 38, 43), piece("'", 43, 44), piece('in', 45, 47), piece('2020', 48, 52),
    piece('.', 52, 53), SEP,
  ];
  const { words } = mergeWords(tokens, text);
  assert.deepEqual(texts(words), [
    '[CLS]', 'It', 'costs', '3.14', 'or', '1,000', 'at', '9', "o'clock", ',', "'", 'hello', "'", 'in', '2020', '.', '[SEP]',
  ]);
  assert.deepEqual(pieces(words).slice(3, 6), [[3, 4, 5], [6], [7, 8, 9]]);
});

test('GPT-2 byte-level BPE: "Ġdidn" + "\'t" is the word " didn\'t"', () => {
  // ByteLevel pre-tokenizer of "The animal didn't cross the street.": The | Ġanimal | Ġdidn | 't | Ġcross | …
  const text = "The animal didn't cross the street.";
  const tokens = [
    piece('The', 0, 3), piece('Ġanimal', 3, 10, ' animal'), piece('Ġdidn', 10, 15, ' didn'), piece("'t", 15, 17),
    piece('Ġcross', 17, 23, ' cross'), piece('Ġthe', 23, 27, ' the'), piece('Ġstreet', 27, 34, ' street'), piece('.', 34, 35),
  ];
  const { words } = mergeWords(tokens, text);
  assert.deepEqual(texts(words), ['The', ' animal', " didn't", ' cross', ' the', ' street', '.']);
  assert.deepEqual(words[2].pieces, [2, 3]);
  // curly apostrophes too: "won’t" as GPT-2 splits it (Ġwon | â€ | Ļ | t: the ’ in two byte tokens)
  const curly = 'I won\u2019t';
  const split = [piece('I', 0, 1), piece('Ġwon', 1, 5, ' won'), piece('âĢ', 5, 6, '\u2019'), piece('Ļ', 5, 6, ''), piece('t', 6, 7)];
  assert.deepEqual(texts(mergeWords(split, curly).words), ['I', ' won\u2019t']);
});

test('a merged word\'s row is the mean of its query pieces and sums its key pieces', () => {
  const text = "didn't go";
  const tokens = [piece('didn', 0, 4), piece("'", 4, 5), piece('t', 5, 6), piece('go', 7, 9)];
  const { words } = mergeWords(tokens, text);
  assert.deepEqual(texts(words), ["didn't", 'go']);
  const matrix = [
    [0.4, 0.3, 0.2, 0.1],
    [0.1, 0.1, 0.1, 0.7],
    [0.25, 0.25, 0.25, 0.25],
    [0, 0, 0.5, 0.5],
  ];
  const merged = wordMatrix(matrix, words);
  // by hand: row "didn't" = mean of rows 0-2 of (sum of columns 0-2, column 3)
  const expected = [[(0.9 + 0.3 + 0.75) / 3, (0.1 + 0.7 + 0.25) / 3], [0.5, 0.5]];
  merged.flat().forEach((value, i) => assert.ok(Math.abs(value - expected.flat()[i]) < 1e-12));
});
