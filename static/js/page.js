// The page shell that every page script builds on: its state in the URL (with history), the
// sentence form, a latest-request-wins guard, the status line and loading indicator, error
// messages in the page's language, and a small cache. The language itself is chosen and the
// page translated by i18n/index.js, imported first.
import { ApiError, getModels } from './api.js';
import { lang, t } from './i18n/index.js';
import { fillModels } from './views/controls.js';

export { lang, t };

export const $ = (id) => document.getElementById(id);

// ---- URL <-> state ---------------------------------------------------------------

/** A non-negative integer from a URL parameter, or 0 (each page checks it against the model later). */
export function indexParam(value) {
  return value !== null && /^\d{1,6}$/.test(value) ? Number(value) : 0;
}

const currentUrl = () => window.location.pathname + window.location.search;

/** The `lang` parameter of this page's URL, kept on every URL the page makes (a shared link keeps its language). */
function keepLanguage(params) {
  const language = new URLSearchParams(window.location.search).get('lang');
  if (language !== null) params.set('lang', language);
  return params;
}

/**
 * A link to another page for the same sentence: `path?text=…&pair=…&model=…` plus the state's
 * fields named in `names` (e.g. layer, head, query).
 */
export function linkTo(path, state, names = []) {
  const params = new URLSearchParams({ text: state.text });
  if (state.pair !== null) params.set('pair', state.pair);
  if (state.model !== null) params.set('model', state.model);
  for (const name of names) params.set(name, String(state[name]));
  return `${path}?${keepLanguage(params)}`;
}

/**
 * A page whose state lives in its URL. `read` turns the query parameters into a state, `write`
 * turns a state into them; `render(state)` draws a state. The `lang` parameter, when the URL has
 * one, is kept on every URL the page makes, so a shared link keeps its language.
 * @template S
 * @param {{path: string, read: (params: URLSearchParams) => S, write: (state: S) => URLSearchParams,
 *   render: (state: S) => unknown}} options
 */
export function createPage({ path, read, write, render }) {
  const urlOf = (state) => {
    const query = keepLanguage(write(state)).toString();
    return query ? `${path}?${query}` : path;
  };
  const state = () => read(new URLSearchParams(window.location.search));

  return {
    state,
    urlOf,
    /** Push a history entry for `state` (unless the URL is unchanged) and render it. */
    navigate(next) {
      const url = urlOf(next);
      if (url !== currentUrl()) window.history.pushState(null, '', url);
      return render(next);
    },
    /** Make the URL say `state` without a new history entry (corrections, animation steps). */
    replace(next) {
      const url = urlOf(next);
      if (url !== currentUrl()) window.history.replaceState(null, '', url);
    },
    /** Render the URL's state now and again whenever Back or Forward changes it. */
    start() {
      window.addEventListener('popstate', () => render(state()));
      return render(state());
    },
  };
}

// ---- requests ----------------------------------------------------------------------

/** Latest request wins: `begin()` hands out a ticket; `current(ticket)` is false once a later one began. */
export function latestWins() {
  let seq = 0;
  return {
    begin: () => ++seq,
    current: (ticket) => ticket === seq,
    cancel: () => {
      seq += 1;
    },
  };
}

/** A least-recently-used cache of at most `limit` values that also shares loads in flight. */
export class Lru {
  constructor(limit) {
    this.limit = limit;
    this.values = new Map();
    this.pending = new Map();
  }

  has(key) {
    return this.values.has(key);
  }

  get(key) {
    if (!this.values.has(key)) return undefined;
    const value = this.values.get(key);
    this.values.delete(key); // most recent last
    this.values.set(key, value);
    return value;
  }

  set(key, value) {
    this.values.delete(key);
    this.values.set(key, value);
    while (this.values.size > this.limit) this.values.delete(this.values.keys().next().value);
    return value;
  }

  /** The value for `key`: cached, the load already in flight, or a new `load()`; failures are not kept. */
  load(key, load) {
    if (this.values.has(key)) return Promise.resolve(this.get(key));
    if (!this.pending.has(key)) {
      const promise = Promise.resolve()
        .then(load)
        .then((value) => this.set(key, value))
        .finally(() => this.pending.delete(key));
      this.pending.set(key, promise);
    }
    return this.pending.get(key);
  }
}

let modelsPromise = null;

/** GET /api/v1/models, asked once per page. */
export function loadModels() {
  modelsPromise ??= getModels();
  return modelsPromise;
}

// ---- status and errors ---------------------------------------------------------------

/** What went wrong, in the page's language; the server's own `detail` is quoted as it came. */
export function errorMessage(error) {
  if (error instanceof ApiError) {
    if (error.code === 'unreachable') return t('error.unreachable');
    if (error.code === 'not-json') return t('error.notJson', { status: error.status });
    if (error.detail) return t('error.server', { status: error.status, detail: error.detail });
    return t('error.status', { status: error.status });
  }
  return t('error.unexpected', { detail: error && error.message ? error.message : String(error) });
}

/**
 * The status line (#status), the loading indicator (#loading) and the region they describe.
 * @param {{status?: HTMLElement, loading?: HTMLElement, region?: HTMLElement|null}} [elements]
 */
export function createStatus({ status = $('status'), loading = $('loading'), region = $('results') } = {}) {
  const show = (message, isError) => {
    status.textContent = message;
    status.classList.toggle('is-error', isError);
  };
  return {
    busy(on) {
      loading.hidden = !on;
      if (region) region.setAttribute('aria-busy', on ? 'true' : 'false');
    },
    info(message = '') {
      show(message, false);
    },
    /** An error message; whatever was drawn last stays on screen. */
    error(error) {
      this.busy(false);
      show(errorMessage(error), true);
    },
    /** An error the page words itself (from a status or an error type, never from prose); as error(). */
    problem(message) {
      this.busy(false);
      show(message, true);
    },
  };
}

/** "attnscope · <page> · <first words of the text>" */
export function setTitle(pageKey, text = null) {
  const parts = ['attnscope', t(pageKey)];
  if (text && text.trim()) parts.push(text.trim().slice(0, 60));
  document.title = parts.join(' · ');
}

// ---- the sentence form (templates/_run_form.html) -------------------------------------------

/**
 * The form of text, optional second segment and model. `onSubmit({text, pair, model})` runs on
 * Enter or Run (pair and model null when empty); changing the model re-runs a non-blank text.
 * @param {{onSubmit: (input: {text: string, pair: string|null, model: string|null}) => void,
 *   status: ReturnType<typeof createStatus>}} options
 */
export function createRunForm({ onSubmit, status }) {
  const form = $('run-form');
  const text = $('text-input');
  const pair = $('pair-input');
  const model = $('model-select');
  let wanted = null; // the model id the URL asks for, selected once the list arrives

  const read = () => ({
    text: text.value,
    pair: pair.value.trim() ? pair.value : null,
    model: model.value || null,
  });

  form.addEventListener('submit', (event) => {
    event.preventDefault();
    onSubmit(read());
  });
  model.addEventListener('change', () => {
    if (text.value.trim()) form.requestSubmit();
  });
  loadModels().then(
    (models) => fillModels(model, models, wanted),
    (error) => status.error(error),
  );

  return {
    read,
    /** Show a state's text, pair and model in the form. */
    write(state) {
      text.value = state.text ?? '';
      pair.value = state.pair ?? '';
      wanted = state.model;
      if (state.model !== null && Array.from(model.options).some((o) => o.value === state.model)) {
        model.value = state.model;
      }
    },
  };
}

export const range = (n) => Array.from({ length: n }, (_, i) => i);

/** Fill a <select> with one option per label (its index as the value, the label as text) and pick `value`. */
export function fillSelect(select, labels, value) {
  select.replaceChildren(...labels.map((text, index) => {
    const option = document.createElement('option');
    option.value = String(index);
    option.textContent = text;
    return option;
  }));
  select.value = String(value);
}
