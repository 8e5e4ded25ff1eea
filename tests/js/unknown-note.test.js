// The note on tokens a model cannot read (static/js/views/unknown-note.js): its counts against the token
// list it is given, counted here, and which advice it gives for which model.
import './browser-globals.js';
import test from 'node:test';
import assert from 'node:assert/strict';

import { unknownCount, unknownNote } from '../../static/js/views/unknown-note.js';

// A sentence as MiniLM's answer lists it: [CLS], 注 and 意 unknown, 力 known, an unknown word of two
// characters, a known word, [SEP].
const tokens = [
  { text: '[CLS]', display: '[CLS]', unknown: false },
  { text: '[UNK]', display: '注', unknown: true },
  { text: '[UNK]', display: '意', unknown: true },
  { text: '力', display: '力', unknown: false },
  { text: '[UNK]', display: 'ŋŋ', unknown: true },
  { text: 'cat', display: 'cat', unknown: false },
  { text: '[SEP]', display: '[SEP]', unknown: false },
];

test('it counts the unknown tokens and the characters they stand for', () => {
  assert.deepEqual(unknownCount(tokens), { tokens: 3, characters: 4, total: 7 });
  assert.deepEqual(unknownCount(tokens.filter((token) => !token.unknown)), { tokens: 0, characters: 0, total: 4 });
});

test('no note when every token is known; the numbers and the advice when some are not', () => {
  assert.equal(unknownNote(tokens.filter((token) => !token.unknown)), '');
  const note = unknownNote(tokens);
  assert.match(note, /^3 of the 7 tokens are \[UNK\]: the model has no entry for 4 characters/);
  assert.match(note, /MiniLM’s vocabulary is English/);
  assert.match(note, /attnscope serve --model google-bert\/bert-base-chinese/);
  assert.equal(unknownNote(tokens, 'minilm'), note, 'null is the default model, MiniLM');
  const other = unknownNote(tokens, 'gpt2');
  assert.doesNotMatch(other, /MiniLM/, 'the advice about MiniLM is for MiniLM only');
  assert.match(other, /attnscope serve --model ORG\/NAME \(docs\/models\.md\)/);
});
