// Control characters in predicted tokens (static/js/figures/token-text.js): a byte-level model's top 5 holds
// single bytes ("\x7f", "\u0014"); what the lens and a generation's top 5 show holds no control or format
// character (Unicode categories Cc and Cf, tested with the regular expression's own tables).
import './browser-globals.js';
import test from 'node:test';
import assert from 'node:assert/strict';

import { lensTable } from '../../static/js/figures/lens.js';
import { escapeInvisible, predictedToken, visibleText } from '../../static/js/figures/token-text.js';

const INVISIBLE = /[\p{Cc}\p{Cf}]/u;

test('a C0 control or DEL shows as its picture, as on every other token', () => {
  assert.equal(predictedToken('\x7f'), '\u2421');
  assert.equal(predictedToken('\u0014'), '\u2414');
  assert.equal(predictedToken('a\u0003b'), 'a\u2403b');
  assert.equal(visibleText('\u0000'), '\u2400');
});

test('characters without a picture show as escapes', () => {
  assert.equal(predictedToken('\u0085'), '\\x85');
  assert.equal(predictedToken('x\u202ey'), 'x\\u202Ey'); // right-to-left override: would reorder the list
  assert.equal(escapeInvisible('\u200b\ufeff'), '\\u200B\\uFEFF');
  assert.equal(predictedToken('注意'), '注意');
  assert.equal(predictedToken(' the'), ' the');
});

test('every code point alone: nothing invisible is left in what a list shows', () => {
  const left = [];
  for (let code = 0; code <= 0x10ffff; code += 1) {
    if (code >= 0xd800 && code <= 0xdfff) continue; // lone surrogates: no character
    if (INVISIBLE.test(predictedToken(String.fromCodePoint(code)))) left.push(code.toString(16));
  }
  assert.deepEqual(left, []);
});

test('a joiner between two characters stays (emoji), alone it is escaped', () => {
  assert.equal(predictedToken('\u{1F469}\u200d\u{1F4BB}'), '\u{1F469}\u200d\u{1F4BB}');
  assert.equal(predictedToken('\u200d'), '\\u200D');
});

test('the lens table and the cell title: raw bytes in, no control character out', () => {
  const answer = { layers: [{ layer: 'embeddings', predictions: [
    { id: 3, token: '\u0103', display: '\u0003', probability: 0.4, logit: 1 },
    { id: 127, token: '<0x7F>', display: '\x7f', probability: 0.3, logit: 0.5 },
    { id: 20, token: '\u0014', display: '\u0014', probability: 0.2, logit: 0.1 },
  ] }] };
  const cells = lensTable(answer).rows[0].cells;
  assert.deepEqual(cells.map((cell) => escapeInvisible(cell.text)), ['\u2403', '\u2421', '\u2414']);
  for (const cell of cells) assert.ok(!INVISIBLE.test(visibleText(cell.token)), cell.token);
});
