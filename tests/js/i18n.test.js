// The two dictionaries (static/js/i18n/en.js, zh.js) and t() of static/js/i18n/index.js.
// The dictionary check is ported from tests/e2e/test_i18n.py (test_the_dictionaries_have_the_same_keys_and_placeholders).
import './browser-globals.js';
import test from 'node:test';
import assert from 'node:assert/strict';

import baseEn from '../../static/js/i18n/en.js';
import baseZh from '../../static/js/i18n/zh.js';
import learnEn from '../../static/js/i18n/learn-en.js';
import learnZh from '../../static/js/i18n/learn-zh.js';
import { has, LANGUAGES, lang, t } from '../../static/js/i18n/index.js';

// What the pages use: each language's dictionary with the learning path's strings merged in (index.js).
const en = LANGUAGES.en.dictionary;
const zh = LANGUAGES.zh.dictionary;

/** The {placeholders} of a string, sorted, as one comparable string. */
const holes = (s) => Array.from(s.matchAll(/\{(\w+)\}/g), (match) => match[1]).sort().join(',');

test('the dictionaries are large and have the same keys', () => {
  assert.ok(Object.keys(en).length > 100, `only ${Object.keys(en).length} keys`);
  assert.deepEqual(Object.keys(en).filter((k) => !(k in zh)), [], 'keys only in en.js');
  assert.deepEqual(Object.keys(zh).filter((k) => !(k in en)), [], 'keys only in zh.js');
});

test('the learning path\'s files have the same keys, all merged, none shadowing a key of en.js or zh.js', () => {
  assert.ok(Object.keys(learnEn).length > 100, `only ${Object.keys(learnEn).length} learn keys`);
  assert.deepEqual(Object.keys(learnEn).filter((k) => !(k in learnZh)), [], 'keys only in learn-en.js');
  assert.deepEqual(Object.keys(learnZh).filter((k) => !(k in learnEn)), [], 'keys only in learn-zh.js');
  assert.deepEqual(Object.keys(learnEn).filter((k) => k in baseEn || k in baseZh), [], 'keys in both files');
  for (const [k, v] of Object.entries(learnEn)) assert.equal(en[k], v);
  for (const [k, v] of Object.entries(learnZh)) assert.equal(zh[k], v);
  assert.equal(Object.keys(en).length, Object.keys(baseEn).length + Object.keys(learnEn).length);
});

test('each key has the same {placeholders} in both languages', () => {
  assert.deepEqual(Object.keys(en).filter((k) => k in zh && holes(en[k]) !== holes(zh[k])), []);
});

test('no string is empty or blank', () => {
  const empty = [...Object.entries(en), ...Object.entries(zh)]
    .filter(([, v]) => typeof v !== 'string' || !v.trim()).map(([k]) => k);
  assert.deepEqual(empty, []);
});

test('strings equal in both languages are notation or names, never English prose', () => {
  // Equal strings with a word of 4+ letters (Softmax, 'attnscope REST API') are allowed only for keys with
  // at most 3 such words: the rule of the Python test, on the key.
  const untranslated = Object.keys(en).filter((k) => k in zh && /[A-Za-z]{4,}/.test(en[k]) && en[k] === zh[k]);
  const offending = untranslated.filter((key) => (key.match(/[A-Za-z]{4,}/g) ?? []).length > 3);
  assert.deepEqual(offending, []);
});

test('with no lang parameter, nothing stored and an English browser the page is English', () => {
  assert.equal(lang, 'en');
  assert.equal(document.documentElement.lang, 'en'); // set by index.js when it was imported
  assert.equal(t('site.nav'), en['site.nav']);
  assert.ok(has('site.nav'));
  assert.ok(!has('no.such.key'));
});

test('t() fills every placeholder it is given, 0 included, and leaves the others as they are', () => {
  assert.equal(en['toy.where.cell'], '{matrix}, row {row}, column {col}');
  assert.equal(t('toy.where.cell', { matrix: 'Queries', row: 'q1', col: 0 }), 'Queries, row q1, column 0');
  assert.equal(t('toy.where.cell', { matrix: 'Keys' }), 'Keys, row {row}, column {col}');
  assert.equal(t('toy.where.cell'), '{matrix}, row {row}, column {col}');
  // A placeholder used twice is filled twice; a value is inserted as text, not read as a pattern.
  assert.equal(en['toy.problem.too_long'], 'too large; toy matrices are at most {max_length} × {max_length}');
  assert.equal(t('toy.problem.too_long', { max_length: 64 }), 'too large; toy matrices are at most 64 × 64');
  assert.equal(t('toy.where.row', { matrix: '$& {row}', row: '$1' }), '$& {row}, row $1');
});

test('t() of a missing key reports it on the console and shows the key', (context) => {
  const error = context.mock.method(console, 'error', () => {});
  assert.equal(t('no.such.key'), 'no.such.key');
  assert.equal(error.mock.callCount(), 1);
  assert.match(String(error.mock.calls[0].arguments[0]), /no en text for "no\.such\.key"/);
});
