// Byte-level BPE and WordPiece tokens in the page's pure modules: how a token is labelled in figures
// (figures/axes.js tokenLabel) and how the word view joins tokens into words (figures/words.js).
// Ported from tests/e2e/test_byte_tokens.py, which ran the same modules in Chromium.
import './browser-globals.js';
import test from 'node:test';
import assert from 'node:assert/strict';

import { insertedSpace, tokenLabel, visibleToken } from '../../static/js/figures/axes.js';
import { hideSpecial, mergeWords, wordMatrix } from '../../static/js/figures/words.js';

// The tokens as the tokenizers library gives them for a GPT-2 vocabulary that lacks "我": three one-byte
// tokens with the same offsets, the first showing the character (model/checkpoints/tokenizer.py).
const TEXT = 'Hello 我们\n';
const TOKENS = [
  { text: 'Hello', display: 'Hello', start: 0, end: 5, special: false, segment: 0 },
  { text: 'Ġæ', display: ' 我', start: 5, end: 7, special: false, segment: 0 },
  { text: 'Ī', display: '', start: 6, end: 7, special: false, segment: 0 },
  { text: 'ĳ', display: '', start: 6, end: 7, special: false, segment: 0 },
  { text: 'ä»¬', display: '们', start: 7, end: 8, special: false, segment: 0 },
  { text: 'Ċ', display: '\n', start: 8, end: 9, special: false, segment: 0 },
];

const pairs = (words) => words.map((word) => [word.text, word.pieces]);

test('labels show every token: continuation bytes as ⋯ and a newline as ↵', () => {
  assert.deepEqual(TOKENS.map((token) => tokenLabel(token)), ['Hello', ' 我', '⋯', '⋯', '们', '↵']);
});

test('a label falls back to the text, marks unknown tokens and shows whitespace and control bytes', () => {
  assert.equal(tokenLabel({ text: 'cat' }), 'cat'); // an older answer with no display
  assert.equal(tokenLabel({ text: '[UNK]', display: '☃', unknown: true }), '☃⟨UNK⟩');
  assert.equal(visibleToken(' '), '␣');
  assert.equal(visibleToken('\t\r\n  '), '⇥↵↵␣␣');
  assert.equal(visibleToken('a\u0001b\u007f'), 'a␁b␡'); // GPT-2's control-byte tokens
  assert.equal(visibleToken(' x'), ' x'); // whitespace that is not alone stays as it is
});

test('the word view joins the bytes of one character', () => {
  // "我" (three tokens) and "们" are separate words: Han characters are words of their own.
  assert.deepEqual(pairs(mergeWords(TOKENS, TEXT).words), [['Hello', [0]], [' 我', [1, 2, 3]], ['们', [4]], ['\n', [5]]]);
});

test('a merged word spans its pieces: offsets, display and segment', () => {
  const word = mergeWords(TOKENS, TEXT).words[1];
  assert.deepEqual(
    { start: word.start, end: word.end, display: word.display, special: word.special, segment: word.segment },
    { start: 5, end: 7, display: ' 我', special: false, segment: 0 },
  );
});

test('WordPiece ## continuations join into one word; special tokens and punctuation are words of their own', () => {
  const text = 'unbelievably cats.';
  const tokens = [
    { text: '[CLS]', start: null, end: null, special: true, segment: 0 },
    { text: 'un', start: 0, end: 2, special: false, segment: 0 },
    { text: '##bel', start: 2, end: 5, special: false, segment: 0 },
    { text: '##ie', start: 5, end: 7, special: false, segment: 0 },
    { text: '##va', start: 7, end: 9, special: false, segment: 0 },
    { text: '##bly', start: 9, end: 12, special: false, segment: 0 },
    { text: 'cats', start: 13, end: 17, special: false, segment: 0 },
    { text: '.', start: 17, end: 18, special: false, segment: 0 },
    { text: '[SEP]', start: null, end: null, special: true, segment: 0 },
  ];
  const { words } = mergeWords(tokens, text);
  assert.deepEqual(pairs(words), [
    ['[CLS]', [0]], ['unbelievably', [1, 2, 3, 4, 5]], ['cats', [6]], ['.', [7]], ['[SEP]', [8]],
  ]);
  assert.deepEqual(words.map((word) => word.special), [true, false, false, false, true]);
  assert.deepEqual([words[0].start, words[0].end], [null, null]);
});

test('a special token stands alone even with offsets that would join it to its neighbours', () => {
  // Special tokens are words of their own whatever their offsets: without that rule "a", "<x>" and "c"
  // below would be one word (their offsets touch with letters on both sides of each seam).
  const tokens = [
    { text: 'a', start: 0, end: 1, special: false, segment: 0 },
    { text: '<x>', start: 1, end: 2, special: true, segment: 0 },
    { text: 'c', start: 2, end: 3, special: false, segment: 0 },
  ];
  const { words } = mergeWords(tokens, 'abc');
  assert.deepEqual(pairs(words), [['a', [0]], ['<x>', [1]], ['c', [2]]]);
  assert.deepEqual([words[1].start, words[1].end, words[1].special], [null, null, true]);
});

test('byte-level "Ġtoken izers" is one word, its text taken from the input', () => {
  const text = 'Hello tokenizers';
  const tokens = [
    { text: 'Hello', display: 'Hello', start: 0, end: 5, special: false, segment: 0 },
    { text: 'Ġtoken', display: ' token', start: 5, end: 11, special: false, segment: 0 },
    { text: 'izers', display: 'izers', start: 11, end: 16, special: false, segment: 0 },
  ];
  assert.deepEqual(pairs(mergeWords(tokens, text).words), [['Hello', [0]], [' tokenizers', [1, 2]]]);
});

test('touching Han characters are separate words, touching Latin letters are one', () => {
  const tokens = [
    { text: '注', start: 0, end: 1, special: false, segment: 0 },
    { text: '意', start: 1, end: 2, special: false, segment: 0 },
    { text: 'ab', start: 2, end: 4, special: false, segment: 0 },
    { text: 'cd', start: 4, end: 6, special: false, segment: 0 },
  ];
  // "意" then "ab": a seam next to a Han character starts a new word.
  assert.deepEqual(pairs(mergeWords(tokens, '注意abcd').words), [['注', [0]], ['意', [1]], ['abcd', [2, 3]]]);
});

test('the second segment takes its text from the pair and never joins the first', () => {
  // Offsets of segment 1 point into textPair; (0, 2) overlaps the first word's (0, 2) but is another segment.
  const tokens = [
    { text: 'ab', start: 0, end: 2, special: false, segment: 0 },
    { text: 'cd', start: 0, end: 2, special: false, segment: 1 },
    { text: 'ef', start: 2, end: 4, special: false, segment: 1 },
  ];
  const { words } = mergeWords(tokens, 'ab', 'cdef');
  assert.deepEqual(pairs(words), [['ab', [0]], ['cdef', [1, 2]]]);
  assert.deepEqual(words.map((word) => word.segment), [0, 1]);
});

test('a word is unknown when one of its pieces is the unknown token', () => {
  const tokens = [
    { text: 'ab', start: 0, end: 2, special: false, segment: 0 },
    { text: '[UNK]', start: 2, end: 3, special: false, segment: 0, unknown: true },
    { text: 'x', start: 4, end: 5, special: false, segment: 0 },
  ];
  const { words } = mergeWords(tokens, 'ab☃ x');
  assert.deepEqual(pairs(words), [['ab', [0]], ['☃', [1]], ['x', [2]]]); // "☃" is no letter: its own word
  assert.deepEqual(words.map((word) => word.unknown), [false, true, false]);
  const joined = mergeWords([tokens[0], { ...tokens[1], start: 2, end: 3 }], 'abc').words;
  assert.deepEqual(pairs(joined), [['abc', [0, 1]]]);
  assert.equal(joined[0].unknown, true);
});

test('wordMatrix sums the key pieces and averages the query pieces, so rows still sum to 1', () => {
  const words = [{ pieces: [0] }, { pieces: [1, 2] }];
  const matrix = [
    [0.5, 0.25, 0.25],
    [0.1, 0.6, 0.3],
    [0.3, 0.3, 0.4],
  ];
  const out = wordMatrix(matrix, words);
  const expected = [[0.5, 0.5], [(0.1 + 0.3) / 2, (0.9 + 0.7) / 2]];
  assert.equal(out.length, 2);
  out.forEach((row, a) => row.forEach((value, b) => assert.ok(Math.abs(value - expected[a][b]) < 1e-12, `${a},${b}`)));
  for (const row of out) assert.ok(Math.abs(row[0] + row[1] - 1) < 1e-12);
});

test('hideSpecial drops special rows and columns and renormalises what is left', () => {
  const tokens = [{ special: true }, { special: false }, { special: false }, { special: true }];
  const matrix = [
    [1, 0, 0, 0],
    [0.5, 0.1, 0.3, 0.1],
    [0.2, 0, 0, 0.8], // nothing left once the specials go: zeros
    [0, 0, 0, 1],
  ];
  const { matrix: out, kept } = hideSpecial(matrix, tokens);
  assert.deepEqual(kept, [1, 2]);
  assert.equal(out.length, 2);
  assert.ok(Math.abs(out[0][0] - 0.25) < 1e-12 && Math.abs(out[0][1] - 0.75) < 1e-12, String(out[0]));
  assert.deepEqual(out[1], [0, 0]);
});

// Llama's byte-fallback tokens for "你好" (model/checkpoints/tokenizer.py): the "▁" the tokenizer put before
// the text is a token of its own (你 is spelt in bytes), shown as a space, not as more bytes of a character.
test('a token of the inserted space alone shows ␣; continuation bytes still show ⋯', () => {
  const tokens = [
    { text: '<s>', display: '<s>', start: null, end: null, special: true, segment: 0 },
    { text: '\u2581', display: '', start: 0, end: 1, special: false, segment: 0 },
    { text: '<0xE4>', display: '你', start: 0, end: 1, special: false, segment: 0 },
    { text: '<0xBD>', display: '', start: 0, end: 1, special: false, segment: 0 },
    { text: '\u2581world', display: ' world', start: 2, end: 8, special: false, segment: 0 },
  ];
  assert.deepEqual(tokens.map((token) => insertedSpace(token)), [false, true, false, false, false]);
  assert.deepEqual(tokens.map((token) => tokenLabel(token)), ['<s>', '␣', '你', '⋯', ' world']);
  assert.equal(insertedSpace({ text: '\u0120', display: ' ', special: false }), false); // a typed space shows itself
});
