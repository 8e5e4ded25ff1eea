// The page's language: English or 中文. Every UI string lives in en.js and zh.js (the same
// keys); templates name them with data-i18n attributes and scripts look them up with t().
//
// The choice is made once per page load: a `lang` URL parameter wins, then the last choice
// (localStorage), then the browser's preferred languages. Switching stores the new choice and
// reloads the page, whose state lives in its URL, so every string, figure and message is drawn
// again in the new language by the same code that drew it the first time.
import en from './en.js';
import learnEn from './learn-en.js';
import learnZh from './learn-zh.js';
import zh from './zh.js';

// The learning path's strings live in their own files (the same keys in both) and join each dictionary here.
export const LANGUAGES = Object.freeze({
  en: { dictionary: { ...en, ...learnEn }, html: 'en' },
  zh: { dictionary: { ...zh, ...learnZh }, html: 'zh-CN' },
});
const STORAGE_KEY = 'attnscope.lang';

function stored() {
  try {
    return window.localStorage.getItem(STORAGE_KEY);
  } catch {
    return null; // storage disabled: the URL parameter and the browser decide
  }
}

function store(code) {
  try {
    window.localStorage.setItem(STORAGE_KEY, code);
  } catch {
    // storage disabled: the choice lasts as long as the URL keeps its lang parameter
  }
}

function browserLanguage() {
  const preferred = navigator.languages && navigator.languages.length ? navigator.languages : [navigator.language];
  return preferred.some((tag) => String(tag).toLowerCase().startsWith('zh')) ? 'zh' : 'en';
}

const known = (code) => typeof code === 'string' && Object.hasOwn(LANGUAGES, code);

function chooseLanguage() {
  const fromUrl = new URLSearchParams(window.location.search).get('lang');
  if (known(fromUrl)) {
    store(fromUrl);
    return fromUrl;
  }
  const remembered = stored();
  return known(remembered) ? remembered : browserLanguage();
}

/** The language of this page load: 'en' or 'zh'. */
export const lang = chooseLanguage();
const dictionary = LANGUAGES[lang].dictionary;

/**
 * The string `key` in the page's language with its {placeholders} filled from `values`.
 * A key missing from the dictionary is a bug: it is reported on the console and shown as is.
 */
export function t(key, values = {}) {
  const text = dictionary[key];
  if (typeof text !== 'string') {
    console.error(`attnscope: no ${lang} text for "${key}"`); // ui-text: not UI (a bug report)
    return key;
  }
  return text.replace(/\{(\w+)\}/g, (match, name) => (name in values ? String(values[name]) : match));
}

/**
 * t() as DOM nodes, for a message that quotes data (a token, a user's sentence): the placeholders named
 * in `data` become <span translate="no"> holding the value as text, the rest is plain text.
 */
export function tNodes(key, values = {}, data = []) {
  const marked = Object.fromEntries(Object.entries(values).map(([name, value]) => [name, data.includes(name)
    ? `\u0000${name}\u0000` : value]));
  return t(key, marked).split('\u0000').map((part, i) => {
    if (i % 2 === 0) return document.createTextNode(part);
    const span = document.createElement('span');
    span.translate = false;
    span.textContent = String(values[part]);
    return span;
  });
}

/** Whether the dictionary has `key` (for messages chosen by a server's error type). */
export function has(key) {
  return typeof dictionary[key] === 'string';
}

const ATTRIBUTES = ['title', 'placeholder', 'aria-label', 'aria-valuetext'];

/**
 * Fill every element under `root` that names a string: data-i18n (text), data-i18n-title, …, and
 * example links, <a href="/path" data-example="key" data-example-query="layer=4&head=3">, whose
 * text is the example sentence and whose link opens it (one source for both).
 */
export function translate(root = document) {
  for (const element of root.querySelectorAll('[data-i18n]')) element.textContent = t(element.dataset.i18n);
  for (const link of root.querySelectorAll('a[data-example]')) {
    const text = t(link.dataset.example);
    const params = new URLSearchParams({ text });
    for (const [name, value] of new URLSearchParams(link.dataset.exampleQuery || '')) params.set(name, value);
    link.textContent = text;
    link.href = `${new URL(link.href).pathname}?${params}`;
  }
  for (const attribute of ATTRIBUTES) {
    for (const element of root.querySelectorAll(`[data-i18n-${attribute}]`)) {
      element.setAttribute(attribute, t(element.getAttribute(`data-i18n-${attribute}`)));
    }
  }
}

/** Store `code` as the user's choice and reload the page in it (the URL keeps the page's state). */
export function switchLanguage(code) {
  if (!known(code) || code === lang) return;
  store(code);
  const url = new URL(window.location.href);
  if (url.searchParams.has('lang')) url.searchParams.set('lang', code); // a lang parameter wins: keep it true
  window.location.replace(url.toString());
}

/** Translate the document, set <html lang>, and make the header's language buttons work. */
function start() {
  document.documentElement.lang = LANGUAGES[lang].html;
  translate(document);
  for (const button of document.querySelectorAll('[data-lang-choice]')) {
    const code = button.dataset.langChoice;
    button.setAttribute('aria-pressed', code === lang ? 'true' : 'false');
    button.addEventListener('click', () => switchLanguage(code));
  }
  document.documentElement.classList.remove('i18n-pending');
}

start();
