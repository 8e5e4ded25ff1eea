// The learning path (/learn, /learn/1 … /learn/16): sixteen short chapters on attention, each around the
// learner's own sentence or the notes' worked example and one live view, with things to try, links that
// open the full pages at the same state, and a link to the next chapter. The chapter is the path; the
// sentence (`text`) and the chapter's own settings are the query string. A path that names no chapter
// (/learn/17, /learn/abc: the server answers 404) shows the contents under a note that says so. The
// chapters seen and the last sentence are kept in this browser only (localStorage, learn/progress.js).
import { $, createPage, createStatus, latestWins, setTitle, t } from './page.js';
import { has, tNodes } from './i18n/index.js';
import { CHAPTERS, chapterOf, pageLink, readParams, tipApplies, writeParams } from './learn/chapters.js';
import { el } from './learn/dom.js';
import { CHAPTERS as COUNT, markSeen, nextUnseen, readSeen, readText, resetSeen, storeText } from './learn/progress.js';
import { releaseFigure } from './views/plot.js';
import { unknownNote } from './views/unknown-note.js';

const storage = (() => {
  try {
    return window.localStorage;
  } catch {
    return { getItem: () => null, setItem() {}, removeItem() {} }; // storage disabled: nothing is kept
  }
})();

const named = /^\/learn\/([^/]+)\/?$/.exec(window.location.pathname);
const chapter = named ? chapterOf(named[1]) : null;
const missing = named !== null && chapter === null; // /learn/<not a chapter>: the contents, and a note
const number = chapter ? chapter.n : 0; // 0: the contents
const path = number ? `/learn/${number}` : '/learn';

/** Numbered paragraphs or items of a chapter: `${prefix}1`, `${prefix}2`, … while the dictionary has them. */
function numbered(prefix) {
  const keys = [];
  for (let i = 1; has(`${prefix}${i}`); i += 1) keys.push(`${prefix}${i}`);
  return keys;
}

// Words the chapters quote from the notes' example sentence, names of people and a formula: data, shown as
// written in every language. A chapter may add values of its own (numbers it computes, e.g. the notes' cost example).
const QUOTED = ['it', 'animal', 'sentence', 'linearAuthors', 'flashAuthors', 'rescale'];
const words = (key, values = {}, of = chapter) => tNodes(key, {
  it: 'it', animal: 'animal', sentence: t('example.animal'), ...(of?.words?.() ?? {}), ...values,
}, QUOTED);

function read(params) {
  const text = params.get('text');
  const state = { text: text !== null && text.trim() ? text : (readText(storage) ?? t('example.animal')) };
  return chapter ? { ...state, ...readParams(chapter, params) } : state;
}

function write(state) {
  const params = new URLSearchParams({ text: state.text });
  if (chapter) for (const [name, value] of writeParams(chapter, state)) params.set(name, value);
  return params;
}

const page = createPage({ path, read, write, render });
const status = createStatus({ region: $('chapter-view') });
const guard = latestWins();
let seen = number ? markSeen(storage, number) : readSeen(storage);

/** The contents beside every chapter: titles, the one shown, and which were seen. */
function drawContents(state) {
  $('learn-toc').replaceChildren(...CHAPTERS.map(({ n, key }) => {
    const link = el('a', { href: pageLink(`/learn/${n}`, { text: state.text }), 'aria-current': n === number ? 'page' : null, dataset: { chapter: String(n) } }, [
      el('span', { class: 'learn-toc-number', text: String(n) }), el('span', { class: 'learn-toc-title', text: t(`${key}.title`) }),
    ]);
    const mark = seen.includes(n) ? el('span', { class: 'learn-seen', text: t('learn.seen') }) : null;
    return el('li', { class: seen.includes(n) ? 'is-seen' : null, dataset: { chapter: String(n) } }, [link, mark]);
  }));
  $('learn-progress').textContent = t('learn.progress', { seen: seen.length, total: COUNT });
  $('learn-progress').dataset.seen = String(seen.length);
}

function drawIntro(state) {
  const next = nextUnseen(seen);
  const start = $('learn-start');
  start.href = pageLink(`/learn/${next ?? 1}`, { text: state.text });
  start.textContent = next === null ? t('learn.again') : next === 1 ? t('learn.start') : t('learn.continue', { n: next });
  $('learn-intro-p1').textContent = t('learn.intro.p1', { count: COUNT });
  const note = $('learn-missing');
  note.hidden = !missing;
  if (missing) note.textContent = t('learn.missing', { total: COUNT });
  $('learn-overview').replaceChildren(...CHAPTERS.map((c) => el('li', { dataset: { chapter: String(c.n) } }, [
    el('a', { href: pageLink(`/learn/${c.n}`, { text: state.text }), text: t(`${c.key}.title`) }), ' ',
    el('span', { class: 'hint' }, words(`${c.key}.lead`, {}, c)),
  ])));
}

/** The chapter's tips; one that names a token waits for the tokens and needs that token in them. */
function drawTips(tokens = null) {
  const keys = numbered(`${chapter.key}.try`).filter((k) => tipApplies(chapter, k, tokens));
  $('chapter-try').replaceChildren(...keys.map((k) => el('li', { dataset: { tip: k } }, words(k))));
}

/** The chapter's words, pager and empty view; the view fills itself. */
function drawChapter(state) {
  const { key } = chapter;
  $('chapter').dataset.chapter = String(number);
  $('chapter-number').textContent = t('learn.chapter', { n: number, total: COUNT });
  $('chapter-title').textContent = t(`${key}.title`);
  $('chapter-text').replaceChildren(...numbered(`${key}.p`).map((k) => el('p', {}, words(k))));
  drawTips();
  const before = CHAPTERS[number - 2] ?? null;
  const after = CHAPTERS[number] ?? null;
  const prev = $('chapter-prev');
  const next = $('chapter-next');
  prev.hidden = before === null;
  prev.href = pageLink(before ? `/learn/${before.n}` : '/learn', { text: state.text });
  if (before) prev.textContent = t('learn.prev', { title: t(`${before.key}.title`) });
  next.href = pageLink(after ? `/learn/${after.n}` : '/learn', { text: state.text });
  next.textContent = after ? t('learn.next', { title: t(`${after.key}.title`) }) : t('learn.finish');
}

function drawLinks(state, values) {
  const links = chapter.links({ ...state, ...values }, t);
  $('chapter-links').replaceChildren(...links.map(({ key, href }, i) => el('a', {
    href, class: i === 0 ? 'button-primary learn-open' : 'learn-also', dataset: { open: String(i) },
  }, words(key))));
}

async function render(state) {
  const ticket = guard.begin();
  storeText(storage, state.text);
  $('learn-text').value = state.text;
  setTitle(number ? `${chapter.key}.title` : missing ? 'learn.missingTitle' : 'page.learn');
  drawContents(state);
  if (!number) {
    drawIntro(state);
    return;
  }
  drawChapter(state);
  const view = $('chapter-view');
  const extra = $('chapter-extra');
  const note = $('chapter-note');
  view.dataset.drawn = '';
  for (const plot of document.querySelectorAll('#chapter .js-plotly-plot')) releaseFigure(plot);
  $('chapter-caption').replaceChildren();
  note.replaceChildren();
  note.hidden = true;
  const ctx = {
    current: () => guard.current(ticket),
    navigate: (patch) => page.navigate({ ...state, ...patch }),
    caption: (key, values, data = []) => {
      if (guard.current(ticket)) $('chapter-caption').replaceChildren(...tNodes(key, values, data));
    },
    /** The tokens the model read for this view: the note on tokens it cannot read, and the tips they allow. */
    tokens: (tokens, model = null) => {
      if (!guard.current(ticket)) return;
      const text = unknownNote(tokens, model);
      note.textContent = text;
      note.hidden = !text;
      drawTips(tokens);
    },
    links: (values) => {
      if (guard.current(ticket)) drawLinks(state, values);
    },
  };
  drawLinks(state, {});
  status.busy(true);
  status.info('');
  try {
    await chapter.view(view, state, ctx);
    if (chapter.extra) {
      extra.hidden = false;
      $('chapter-extra-heading').replaceChildren(...words(chapter.extra.heading));
      await chapter.extra.view($('chapter-extra-view'), ctx, t);
    }
  } catch (error) {
    if (guard.current(ticket)) status.error(error);
    return;
  }
  if (!guard.current(ticket)) return;
  status.busy(false);
  view.dataset.drawn = page.urlOf(state);
}

$('learn-form').addEventListener('submit', (event) => {
  event.preventDefault();
  const text = $('learn-text').value;
  if (!text.trim()) return;
  page.navigate({ ...page.state(), text });
});

$('learn-reset').addEventListener('click', () => {
  resetSeen(storage);
  seen = [];
  render(page.state());
});

document.body.classList.add(number ? 'learn-chapter-page' : 'learn-contents-page');
page.start();
