// The page shell that every page script builds on: its state in the URL (with history), the
// sentence form, a latest-request-wins guard, the status line and loading indicator, error
// messages in the page's language, and a small cache. The language itself is chosen and the
// page translated by i18n/index.js, imported first.
import { ApiError, getModels } from './api.js';
import { lang, t } from './i18n/index.js';

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
  const pair = state.pair ?? state.heldPair ?? null; // a held pair stays in every link
  if (pair !== null) params.set('pair', pair);
  if (state.model !== null) params.set('model', state.model);
  for (const name of names) params.set(name, String(state[name]));
  return `${path}?${keepLanguage(params)}`;
}

/**
 * A page whose state lives in its URL. `read` turns the query parameters into a state, `write`
 * turns a state into them; `render(state)` draws a state. The `lang` parameter, when the URL has
 * one, is kept on every URL the page makes, so a shared link keeps its language.
 *
 * On a page with the sentence form (createRunForm), a state's second segment follows the chosen
 * model's rules (withModelRules): for a model that takes one text, `pair` is null and the URL's
 * pair is kept as `heldPair`, written back into every URL but never sent.
 * @template S
 * @param {{path: string, read: (params: URLSearchParams) => S, write: (state: S) => URLSearchParams,
 *   render: (state: S) => unknown}} options
 */
export function createPage({ path, read, write, render }) {
  const rules = (state) => (runFormOnPage ? withModelRules(state) : state);
  const urlOf = (state) => {
    const query = keepLanguage(write(withPairShown(state))).toString();
    return query ? `${path}?${query}` : path;
  };
  const state = () => rules(read(new URLSearchParams(window.location.search)));
  /** Render `next` under the model's rules; when it has a pair and the models are not known yet, once they are. */
  const draw = (next) => {
    if (runFormOnPage && modelList === null && next && (next.pair ?? next.heldPair ?? null) !== null) {
      return loadModels().catch(() => null).then(() => render(rules(next)));
    }
    return render(rules(next));
  };

  return {
    state,
    urlOf,
    /** Push a history entry for `state` (unless the URL is unchanged) and render it. */
    navigate(next) {
      const url = urlOf(next);
      if (url !== currentUrl()) window.history.pushState(null, '', url);
      return draw(next);
    },
    /** Make the URL say `state` without a new history entry (corrections, animation steps). */
    replace(next) {
      const url = urlOf(next);
      if (url !== currentUrl()) window.history.replaceState(null, '', url);
    },
    /** Render the URL's state now and again whenever Back or Forward changes it. */
    start() {
      const fromUrl = () => read(new URLSearchParams(window.location.search));
      window.addEventListener('popstate', () => draw(fromUrl()));
      return draw(fromUrl());
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

// ---- the models ------------------------------------------------------------------------

let modelsPromise = null;
let modelList = null; // the models once /api/v1/models has answered
let runFormOnPage = false; // createRunForm was called: states follow the chosen model's rules

/** GET /api/v1/models, asked once per page. */
export function loadModels() {
  modelsPromise ??= getModels().then((models) => {
    modelList = models;
    return models;
  });
  return modelsPromise;
}

/**
 * The model `id` names (null: the server's default) after GET /api/v1/models has answered; null for an id the
 * server does not have, or when it could not be asked (a panel that needs the model then stays hidden).
 */
export async function loadModelOf(id) {
  await loadModels().catch(() => null);
  return modelOf(id);
}

/**
 * The model a state's `model` names (null: the server's default), once the models are known;
 * null before, or for an id the server does not have (the server then says so).
 */
export function modelOf(id) {
  if (modelList === null) return null;
  if (id === null || id === undefined) return modelList.find((m) => m.default) || modelList[0] || null;
  return modelList.find((m) => m.id === id) || null;
}

/** Whether the model `id` names (null: the server's default) takes one text; false while the models are unknown. */
export const takesOneText = (id) => modelOf(id)?.pairs === false;

/**
 * A state whose second segment follows its model: a model that takes one text (`pairs: false`)
 * gets `pair: null`, the segment kept as `heldPair` (in the URL, never sent); any other model gets
 * it back as `pair`. States without a `pair` field are returned as they are.
 */
export function withModelRules(state) {
  if (!state || typeof state !== 'object' || !('pair' in state)) return state;
  const pair = state.pair ?? state.heldPair ?? null;
  if (takesOneText(state.model ?? null) && pair !== null) return { ...state, pair: null, heldPair: pair };
  return { ...state, pair, heldPair: null };
}

/** The state as its URL says it: a held pair is written as the pair. */
function withPairShown(state) {
  return state && state.pair === null && state.heldPair ? { ...state, pair: state.heldPair } : state;
}

/** A model's name without the server's " (…)" (its source, layers and heads, in English): "all-MiniLM-L6-v2". */
export const modelName = (model) => (model.name || model.id).split(' (')[0];

/** The sliding window of `layer` of a model (GET /api/v1/models window, window_layers), or null: none there. */
export function layerWindow(model, layer) {
  if (!model || !model.window) return null;
  return model.window_layers && !model.window_layers.includes(layer) ? null : model.window;
}

/** A model's sliding window in words ('' without one): its width, what a token sees, the layers that have it. */
export function windowText(model) {
  if (!model || !model.window) return '';
  const values = { window: model.window, before: model.window - 1 };
  if (!model.window_layers) return t('models.window', values);
  const key = model.window_layers.length === 1 ? 'models.windowLayers.one' : 'models.windowLayers';
  return t(key, { ...values, layers: model.window_layers.join(', ') });
}

/**
 * What the picker's title says of a model, in the page's language: name (data), architecture (data), sizes,
 * token limit, causal, sliding window, one text.
 */
export function modelTitle(model) {
  const parts = [t('models.title', {
    name: modelName(model), architecture: model.architecture || '?', layers: model.n_layers,
    heads: model.n_heads, max: model.max_tokens,
  })];
  if (model.causal) parts.push(t('models.title.causal'));
  if (model.window) parts.push(windowText(model));
  if (model.pairs === false) parts.push(t('models.title.single'));
  return parts.join(' · ');
}

/** Fill the model <select> from /api/v1/models (its id, a title saying the rest); select `selectedId` or the default. */
export function fillModels(select, models, selectedId) {
  select.replaceChildren(...models.map((model) => {
    const option = document.createElement('option');
    option.value = model.id;
    option.textContent = t(model.causal ? 'models.option.causal' : 'models.option', { id: model.id });
    option.title = modelTitle(model);
    if (model.causal) option.dataset.causal = 'true';
    return option;
  }));
  const chosen = models.find((model) => model.id === selectedId) || models.find((model) => model.default);
  if (chosen) select.value = chosen.id;
  const shown = models.find((model) => model.id === select.value);
  select.title = shown ? modelTitle(shown) : '';
}

// ---- status and errors ---------------------------------------------------------------

/** What went wrong, in the page's language; the server's own `detail` is quoted as it came. */
export function errorMessage(error) {
  if (error instanceof ApiError) {
    if (error.code === 'unreachable') return t('error.unreachable');
    const tooLong = tooLongMessage(error);
    if (tooLong) return tooLong;
    const worded = refusalWords(error);
    if (worded) return worded;
    if (error.code === 'not-json') return t('error.notJson', { status: error.status });
    if (error.detail) return t('error.server', { status: error.status, detail: error.detail });
    return t('error.status', { status: error.status });
  }
  return t('error.unexpected', { detail: error && error.message ? error.message : String(error) });
}

/**
 * "This input has 80 tokens; tiny-gpt2 takes at most 64", for a 413 too_many_tokens answer
 * (its ctx gives the count and the limit; the model is the form's); null for any other error.
 */
function tooLongMessage(error) {
  const item = error.body && Array.isArray(error.body.errors) ? error.body.errors[0] : null;
  if (!item || item.type !== 'too_many_tokens') return null;
  const ctx = item.ctx || {};
  const id = ctx.model ?? (runFormModel ? runFormModel() : null);
  const model = modelOf(id);
  const name = model ? model.id : id;
  const limit = Number.isInteger(ctx.limit) ? ctx.limit : model ? model.max_tokens : null;
  const values = { count: ctx.count, model: name, limit };
  if (name && limit !== null) {
    return t(Number.isInteger(ctx.count) ? 'models.tooLong' : 'models.tooLongLimit', values);
  }
  return Number.isInteger(ctx.count) && limit !== null ? t('models.tooLongAny', values) : null;
}

let runFormModel = null; // () => the model id the form has chosen

const INDEX_FIELDS = ['layer', 'layers', 'head', 'heads', 'query'];

/**
 * The page's own words for the refusals a learner meets most (a blank sentence or second sentence, an
 * index the model or the sentence does not have), from the answer's error type and field (a value error's
 * message only tells blank from other faults); null for any other error.
 */
function refusalWords(error) {
  const item = error.body && Array.isArray(error.body.errors) ? error.body.errors[0] : null;
  if (!item || !Array.isArray(item.loc)) return null;
  const field = item.loc[1]; // the field sent, after "body", "query" or "path" (an edit's fields are under "edit")
  if (item.type === 'value_error' && /blank/.test(item.msg || '')) {
    if (field === 'text') return t('error.blank');
    if (field === 'text_pair') return t('error.blankPair');
  }
  if (item.type === 'index_out_of_range') {
    if (INDEX_FIELDS.includes(field)) return t(`error.outOfRange.${field.replace(/s$/, '')}`);
  }
  return null;
}

/** A refused request (4xx): what was sent is what to change, so it is said beside the form that sent it. */
const refusedRequest = (error) => error instanceof ApiError && error.status >= 400 && error.status < 500;

/**
 * The status line (#status), the loading indicator (#loading) and the region they describe, and the slot
 * beside the page's form (#form-error, next to its submit button) where a refused request is said too.
 * @param {{status?: HTMLElement, loading?: HTMLElement, region?: HTMLElement|null, beside?: HTMLElement|null}} [elements]
 */
export function createStatus({
  status = $('status'), loading = $('loading'), region = $('results'), beside = document.getElementById('form-error'),
} = {}) {
  const show = (message, isError) => {
    status.textContent = message;
    status.classList.toggle('is-error', isError);
    if (beside && !isError) {
      beside.textContent = '';
      beside.hidden = true; // an answer or a new request: what was refused before is gone
    }
  };
  return {
    busy(on) {
      loading.hidden = !on;
      if (region) region.setAttribute('aria-busy', on ? 'true' : 'false');
    },
    info(message = '') {
      show(message, false);
    },
    /**
     * An error message; whatever was drawn last stays on screen. A refused request is also said beside
     * the form (unless `beside` is false: another control's own slot says it).
     */
    error(error, { beside: there = true } = {}) {
      this.busy(false);
      const message = errorMessage(error);
      show(message, true);
      if (beside && there && refusedRequest(error)) {
        beside.textContent = message;
        beside.hidden = false;
      }
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

// ---- the sentence form (templates/_run_form.html, or a page's own: /compare) ----------------------------

/** The form of / and /steps: ids, each text's state fields (`held`: a pair the model does not take), words. */
const SENTENCE_FORM = {
  form: 'run-form', note: 'pair-note', drop: 'pair-drop',
  texts: [{ text: 'text-input', pair: 'pair-input', keys: { text: 'text', pair: 'pair', held: 'heldPair' } }],
  words: { placeholder: 'form.pair.placeholder', single: 'models.pair.single', held: 'models.pair.held' },
};

/**
 * The form of texts, each with an optional second segment, and model. `onSubmit(input)` runs on Enter or Run
 * (a blank pair and no model are null); a new model keeps the fields and re-runs if a text is not blank. For a
 * model that takes one text the pair fields are disabled and a note says so. The sentence form gives
 * {text, pair, heldPair, model}: such a model's pair comes as `heldPair` (kept in the URL, not sent), `pair`
 * null; a form without `held` fields (/compare) gives its pairs as typed and leaves the rule to the page.
 * @param {{onSubmit: (input: object) => void, status: ReturnType<typeof createStatus>, fields?: typeof SENTENCE_FORM}} options
 */
export function createRunForm({ onSubmit, status, fields = SENTENCE_FORM }) {
  const form = $(fields.form);
  const model = $('model-select');
  const pairNote = $(fields.note);
  const pairDrop = $(fields.drop);
  const texts = fields.texts.map(({ text, pair, keys }) => ({ text: $(text), pair: $(pair), keys }));
  let wanted = null; // the model id the URL asks for, selected once the list arrives
  runFormOnPage = true;
  runFormModel = () => model.value || wanted;

  /** The pair fields and their note for the chosen model. */
  function showPairRule() {
    const current = modelOf(model.value || wanted);
    const single = Boolean(current && current.pairs === false);
    for (const { pair } of texts) {
      pair.disabled = single;
      pair.placeholder = t(single ? 'models.pair.placeholder' : fields.words.placeholder);
      pair.closest('.field').classList.toggle('is-disabled', single);
      if (single) pair.setAttribute('aria-describedby', pairNote.id); else pair.removeAttribute('aria-describedby');
    }
    const held = single && texts.some(({ pair }) => pair.value.trim() !== '');
    pairNote.hidden = !single;
    pairDrop.hidden = !held;
    const note = held ? fields.words.held : fields.words.single;
    if (single) pairNote.querySelector('.pair-note-text').textContent = t(note, { model: current.id });
    model.title = current ? modelTitle(current) : '';
  }

  const read = () => {
    const single = takesOneText(model.value || wanted);
    const input = {};
    for (const { text, pair, keys } of texts) {
      const typed = pair.value.trim() ? pair.value : null;
      input[keys.text] = text.value;
      input[keys.pair] = single && keys.held ? null : typed;
      if (keys.held) input[keys.held] = single ? typed : null;
    }
    input.model = model.value || null;
    return input;
  };
  const rerun = () => {
    if (texts.some(({ text }) => text.value.trim())) onSubmit(read());
  };

  form.addEventListener('submit', (event) => {
    event.preventDefault();
    onSubmit(read());
  });
  model.addEventListener('change', () => {
    showPairRule();
    rerun();
  });
  pairDrop.addEventListener('click', () => {
    for (const { pair } of texts) pair.value = '';
    showPairRule();
    rerun();
  });
  loadModels().then((models) => {
    fillModels(model, models, wanted);
    showPairRule();
  }, (error) => status.error(error));

  return {
    read,
    /** Show a state's texts, pairs (or held pairs) and model in the form. */
    write(state) {
      for (const { text, pair, keys } of texts) {
        text.value = state[keys.text] ?? '';
        pair.value = state[keys.pair] ?? (keys.held ? state[keys.held] : null) ?? '';
      }
      wanted = state.model;
      const fallback = state.model === null ? modelOf(null) : null; // the server's default, once known
      if (fallback) model.value = fallback.id;
      else if (Array.from(model.options).some((o) => o.value === state.model)) model.value = state.model;
      if (modelList !== null) showPairRule();
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
