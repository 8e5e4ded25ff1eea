// The explorer's "Continue this text" panel (POST /api/v1/generate), for a model with an LM head (`lm_head`
// in /api/v1/models); for any other model it says why it is unavailable. The answer is a stream of
// server-sent events over a POST (sse.js reads it; EventSource cannot POST): each new token is added after
// the input as it arrives, with its probability and the model's top 5 on hover or focus; the chosen layer
// and head's map grows by that token's row (the input's rows are the explorer's own map); the KV cache's
// bytes beside what multi-head attention would keep. Stop aborts the request (the server then stops).
// Token text reaches the DOM through textContent only, control characters made visible (figures/token-text.js).
// The run is not in the URL: it is an action, and "Open the whole text" makes its result an ordinary input.
import { startGenerate } from '../api.js';
import { binaryBytes, exact } from '../figures/cost.js';
import { attentionHeatmapFigure } from '../figures/heatmap.js';
import { escapeInvisible, predictedToken } from '../figures/token-text.js';
import { errorMessage, lang, loadModels, modelOf, t } from '../page.js';
import { readEventStream } from '../sse.js';
import { fetchLayer, headRows, sentenceKey } from './explorer-data.js';
import {
  applyEvent, cacheNumbers, createRun, DEFAULT_NEW_TOKENS, grownMatrix, readSettings, room, samples, stopRun,
  wholeText,
} from './generate-state.js';
import { loadPlotly } from './plotly-loader.js';

const percent = (p) => `${(p * 100).toFixed(p >= 0.001 ? 1 : 3)}%`;
const locale = () => (lang === 'zh' ? 'zh-CN' : 'en');

/** The words of the settings: greedy, or what the draw is made from. */
export function modeSentence(body) {
  if (!samples(body)) return t('generate.mode.greedy');
  const k = body.top_k > 0;
  const p = body.top_p < 1;
  const pool = k && p ? t('generate.pool.both', { k: body.top_k, p: body.top_p })
    : k ? t('generate.pool.topK', { k: body.top_k }) : p ? t('generate.pool.topP', { p: body.top_p }) : t('generate.pool.all');
  return t('generate.mode.sampled', { temperature: body.temperature, pool, seed: body.seed });
}

/** The sentence saying how a run ended (or how far it is). */
export function stateSentence(run) {
  const count = run.tokens.length;
  if (run.stopped === 'end') return t('generate.stopped.end', { count });
  if (run.stopped === 'length') return t('generate.stopped.length', { count });
  if (run.stopped === 'user') return t('generate.stopped.user', { count });
  if (run.prompt === null) return t('generate.waiting');
  return t('generate.running', { count, most: run.body.max_new_tokens });
}

/** A new token's text in the running text: as written, except control characters other than line ends and
 * tabs, shown as their Unicode pictures (a byte-level vocabulary has a token for each; as such they show nothing). */
export const shownText = (display) => escapeInvisible(display.replace(/[\u0000-\u0008\u000b-\u001f\u007f]/g,
  (c) => String.fromCharCode(c === '\u007f' ? 0x2421 : 0x2400 + c.charCodeAt(0))));

function span(className, text) {
  const element = document.createElement('span');
  element.className = className;
  element.textContent = text;
  return element;
}

/**
 * @param {object} els the panel's elements (templates/index.html, ids generate-*)
 * @param {{onOpen: (text: string) => void}} options "Open the whole text" was pressed
 */
export function createGeneratePanel(els, { onOpen }) {
  let ticket = 0; // a newer draw() wins
  let context = null; // {state, model, tokens, key, most}: the explorer's input the panel is for
  let run = null;
  let controller = null;
  let chosen = null; // the new token shown in the detail (index into run.tokens); null: the latest
  let mapWanted = false; // the map needs drawing
  let mapDrawing = false; // a draw is under way (the next waits for it: at most one per moment)
  let view = null; // views/heatmap.js, once plotly.js has run
  let typedMax = false; // the user has typed a number of new tokens

  const fields = [els.maxNew, els.temperature, els.topK, els.topP, els.seed];
  const typed = () => ({
    maxNew: els.maxNew.value, temperature: els.temperature.value, topK: els.topK.value, topP: els.topP.value,
    seed: els.seed.value,
  });
  const running = () => controller !== null;

  /** The settings as typed, or greedy with the defaults when they cannot be read (the error says why). */
  function typedBody() {
    const read = readSettings(typed(), Math.max(1, context ? context.most : 1));
    return read.body || null;
  }

  function drawMode() {
    const body = run && (running() || run.tokens.length) ? run.body : typedBody();
    els.mode.textContent = body ? modeSentence(body) : '';
    const sampling = Number(els.temperature.value) > 0;
    els.sampling.classList.toggle('is-off', !sampling);
    for (const field of [els.topK, els.topP, els.seed]) field.disabled = running() || !sampling;
  }

  function drawButtons() {
    const most = context ? context.most : 0;
    els.start.disabled = running() || !context || !context.model.lm_head || most < 1;
    els.stop.hidden = !running();
    els.start.hidden = running();
    els.maxNew.disabled = running() || most < 1;
    els.temperature.disabled = running() || most < 1;
    els.open.hidden = running() || !run || run.tokens.length === 0;
    els.panel.setAttribute('aria-busy', running() ? 'true' : 'false');
    els.panel.dataset.state = running() ? 'running' : run ? run.stopped || 'error' : 'idle';
    drawMode();
  }

  function showError(message) {
    els.error.hidden = !message;
    els.error.textContent = message || '';
  }

  function drawRoom() {
    const { model, tokens, most } = context;
    const values = { tokens: tokens.length, model: model.id, limit: model.max_tokens, most };
    els.room.textContent = most < 1 ? t('generate.noRoom', values) : t('generate.room', values);
    els.room.classList.toggle('is-error', most < 1);
    els.maxNew.max = String(Math.max(1, most));
    // the default until the user types a number; theirs is kept, cut to what this input leaves room for
    if (most >= 1 && (!typedMax || Number(els.maxNew.value) > most)) {
      els.maxNew.value = String(typedMax ? most : Math.min(DEFAULT_NEW_TOKENS, most));
    }
  }

  // ---- the new tokens, their detail and the cache ----

  function tokenButton(token, i) {
    const button = document.createElement('button');
    button.type = 'button';
    button.className = 'generate-token';
    button.dataset.index = String(token.index);
    button.dataset.id = String(token.token.id);
    button.dataset.at = String(i);
    button.textContent = shownText(token.token.display);
    if (token.token.display === '') button.classList.add('is-empty');
    return button;
  }

  function drawDetail() {
    if (!run || !run.tokens.length) {
      els.detail.replaceChildren(span('hint', t('generate.detail.hint')));
      return;
    }
    const at = chosen !== null && chosen < run.tokens.length ? chosen : run.tokens.length - 1;
    const token = run.tokens[at];
    for (const button of els.text.querySelectorAll('.generate-token')) {
      button.classList.toggle('is-chosen', Number(button.dataset.at) === at);
    }
    const name = span('generate-detail-token', predictedToken(token.token.display));
    name.translate = false;
    const head = document.createElement('p');
    head.className = 'generate-detail-head';
    head.append(t('generate.detail.token', { index: token.index, at: at + 1 }), ' ', name, ' ',
      t('generate.detail.probability', { probability: percent(token.probability), id: token.token.id }));
    const list = document.createElement('ol');
    list.className = 'generate-top';
    list.setAttribute('aria-label', t('generate.detail.top'));
    for (const alternative of token.top) {
      const item = document.createElement('li');
      item.dataset.id = String(alternative.id);
      item.classList.toggle('is-chosen', alternative.id === token.token.id);
      item.style.setProperty('--p', String(alternative.probability));
      const text = span('generate-top-token', predictedToken(alternative.display));
      text.translate = false;
      item.append(text, span('generate-top-probability', percent(alternative.probability)));
      list.append(item);
    }
    const parts = [head, span('generate-top-label', t('generate.detail.top')), list];
    if (!token.top.some((alternative) => alternative.id === token.token.id)) {
      parts.push(span('hint', t('generate.detail.notInTop')));
    }
    els.detail.replaceChildren(...parts);
  }

  function drawCache() {
    if (!run || !run.tokens.length) {
      els.cache.hidden = true;
      return;
    }
    els.cache.hidden = false;
    const numbers = cacheNumbers(run.prompt, run.tokens[run.tokens.length - 1]);
    const bytes = (n) => `${binaryBytes(n)} (${exact(n, locale())} B)`;
    els.cacheSize.textContent = t('generate.cache.size', { size: bytes(numbers.bytes), tokens: numbers.tokens });
    els.cacheFormula.textContent = t('generate.cache.formula', {
      layers: numbers.layers, tokens: numbers.tokens, kvHeads: numbers.kvHeads, dHead: numbers.dHead,
      size: numbers.size, dtype: numbers.dtype, bytes: exact(numbers.formula, locale()),
    });
    els.cacheCompare.textContent = numbers.grouped
      ? t('generate.cache.grouped', {
        size: bytes(numbers.multiHead), heads: numbers.heads, kvHeads: numbers.kvHeads,
        group: numbers.heads / numbers.kvHeads, saved: binaryBytes(numbers.multiHead - numbers.bytes),
      })
      : t('generate.cache.multiHead', { heads: numbers.heads });
    els.cache.dataset.bytes = String(numbers.bytes);
    els.cache.dataset.multiHead = String(numbers.multiHead);
  }

  function drawState() {
    els.state.textContent = run ? stateSentence(run) : '';
    els.speed.hidden = !(run && run.done);
    if (run && run.done) els.speed.textContent = t('generate.speed', { speed: run.done.tokens_per_second });
  }

  function resetOutput() {
    chosen = null;
    els.text.replaceChildren(span('generate-input', context ? context.state.text : ''));
    els.output.hidden = true;
    els.cache.hidden = true;
    els.mapBox.hidden = true;
    els.speed.hidden = true;
    els.state.textContent = '';
    delete els.map.dataset.rows;
    delete els.map.dataset.count;
    showError('');
  }

  // ---- the growing map ----

  function scheduleMap() {
    mapWanted = true;
    if (!mapDrawing) drawMap();
  }

  async function drawMap() {
    mapDrawing = true;
    try {
      while (mapWanted) {
        mapWanted = false;
        if (!run || !run.prompt || !run.tokens.length || !context) break;
        const { state } = context;
        const layer = state.layer;
        const head = state.head;
        const n = run.prompt.tokens.length;
        let input = null;
        try {
          const maps = await fetchLayer(state, layer, null); // the explorer's own download, cached
          if (maps.n === n && maps.heads.includes(head)) input = headRows(maps, head);
        } catch {
          input = null; // the input's rows stay empty; the new rows are still drawn
        }
        if (!view) {
          await loadPlotly();
          view = await import('./heatmap.js');
        }
        if (!run || !run.prompt || !context) break;
        if (context.state.layer !== layer || context.state.head !== head) {
          mapWanted = true; // the pickers moved while the input's rows were read: draw the head now chosen
          continue;
        }
        const tokens = [...run.prompt.tokens, ...run.tokens.map((token) => ({ ...token.token, generated: true }))];
        const matrix = grownMatrix(input, n, run.tokens, layer, head);
        const last = tokens.length - 1;
        els.mapBox.hidden = false;
        const figure = attentionHeatmapFigure({
          tokens, matrix, layer, head, query: last, boundary: n, size: els.map.clientWidth || 400,
        });
        await view.renderHeatmap(els.map, figure, { text: context.state.text, layer, head, keep: [last] });
        els.map.dataset.rows = String(matrix.length);
        els.map.dataset.count = String(run.tokens.length);
        els.map.dataset.layer = String(layer);
        els.map.dataset.head = String(head);
        els.mapNote.textContent = t('generate.map.note', { layer, head, tokens: n, count: run.tokens.length })
          + (context.state.edit ? ` ${t('generate.unedited')}` : '');
      }
    } finally {
      mapDrawing = false;
    }
  }

  // ---- a run ----

  function onToken(token) {
    const button = tokenButton(token, run.tokens.length - 1);
    els.text.append(button);
    els.text.scrollTop = els.text.scrollHeight;
    els.output.hidden = false;
    drawDetail();
    drawCache();
    drawState();
    scheduleMap();
  }

  async function start() {
    if (!context || running()) return;
    const read = readSettings(typed(), context.most);
    for (const field of fields) field.removeAttribute('aria-invalid');
    if (read.error) {
      const field = { maxNew: els.maxNew, temperature: els.temperature, topK: els.topK, topP: els.topP, seed: els.seed }[read.error.field];
      field.setAttribute('aria-invalid', 'true');
      showError(t(read.error.key, read.error.values));
      field.focus();
      return;
    }
    resetOutput();
    els.output.hidden = false; // the input, and the new tokens after it as they come
    const mine = createRun(read.body);
    run = mine;
    controller = new AbortController();
    const { signal } = controller;
    drawButtons();
    drawState();
    const request = { text: context.state.text, model: context.model.id, ...read.body };
    try {
      const response = await startGenerate(request, signal);
      await readEventStream(response.body, (event) => {
        applyEvent(mine, event.event, JSON.parse(event.data));
        if (event.event === 'token') onToken(mine.tokens[mine.tokens.length - 1]);
        else drawState();
      }, signal);
      if (!mine.done) throw new Error('cut-off');
    } catch (error) {
      if (run !== mine) return; // reset meanwhile (a new input): nothing of this run is shown
      if (error && error.name === 'AbortError') {
        stopRun(mine);
      } else {
        showError(refusal(error, mine));
        if (!mine.tokens.length) els.output.hidden = true;
      }
    } finally {
      if (run === mine) {
        controller = null;
        drawButtons();
        drawState();
        drawDetail();
      }
    }
  }

  /** What went wrong, in the page's words. */
  function refusal(error, mine) {
    const item = error && error.body && Array.isArray(error.body.errors) ? error.body.errors[0] : null;
    if (item && item.type === 'generate_too_long' && item.ctx) {
      return t('generate.tooLong', { tokens: item.ctx.tokens, limit: item.ctx.limit, most: item.ctx.limit - item.ctx.tokens });
    }
    if (error instanceof Error && !('status' in error)) return t('generate.cutOff', { count: mine.tokens.length });
    return errorMessage(error);
  }

  function stop() {
    if (controller) controller.abort();
  }

  /** Forget the run (a new input or model): an unfinished one is aborted first. */
  function reset() {
    const old = controller;
    run = null;
    controller = null;
    if (old) old.abort();
    resetOutput();
  }

  els.form.addEventListener('submit', (event) => {
    event.preventDefault();
    start();
  });
  els.stop.addEventListener('click', stop);
  els.open.addEventListener('click', () => {
    if (run && context) onOpen(wholeText(context.state.text, run));
  });
  els.maxNew.addEventListener('input', () => { typedMax = true; });
  for (const field of fields) {
    field.addEventListener('input', () => {
      field.removeAttribute('aria-invalid');
      showError('');
      drawMode();
    });
  }
  const choose = (event) => {
    const button = event.target.closest('.generate-token');
    if (!button) return;
    chosen = Number(button.dataset.at);
    drawDetail();
  };
  els.text.addEventListener('mouseover', choose);
  els.text.addEventListener('focusin', choose);
  els.text.addEventListener('click', choose);
  els.maxNew.value = String(DEFAULT_NEW_TOKENS);

  return {
    /** The explorer shows a new state: its input, model, layer and head. */
    async draw(state, tokens) {
      const mine = ++ticket;
      const models = await loadModels().catch(() => null);
      if (mine !== ticket) return;
      const model = models && modelOf(state.model);
      if (!model) {
        els.panel.hidden = true;
        reset();
        context = null;
        return;
      }
      els.panel.hidden = false;
      const key = `${sentenceKey(state)}|${model.id}`;
      if (!context || context.key !== key) {
        context = { key, state, model, tokens, most: room(model.max_tokens, tokens.length) };
        reset();
      } else {
        const moved = context.state.layer !== state.layer || context.state.head !== state.head;
        context = { ...context, state };
        if (moved && run && run.tokens.length) scheduleMap();
      }
      els.panel.dataset.model = model.id;
      if (!model.lm_head) {
        const able = models.filter((m) => m.lm_head).map((m) => m.id);
        els.unavailable.textContent = able.length
          ? t('generate.unavailable', { model: model.id, models: able.join(', ') })
          : t('generate.unavailableAll', { model: model.id });
        els.unavailable.hidden = false;
        els.form.hidden = true;
        els.room.hidden = true;
        els.panel.classList.add('is-unavailable');
      } else {
        els.unavailable.hidden = true;
        els.form.hidden = false;
        els.room.hidden = false;
        els.panel.classList.remove('is-unavailable');
        drawRoom();
      }
      drawButtons();
    },
  };
}
