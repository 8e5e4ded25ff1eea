// The explorer's logit lens panel (POST /api/v1/lens), shown only for a model with an LM head
// (`lm_head` in /api/v1/models): what each layer's residual stream would predict as the next token,
// top 5 per layer, at one position. The position is `lens=POS` in the URL (the panel's select), else
// the focused token (a click on a token chip, the head view or the large map), else the last token.
// Token text reaches the DOM through textContent only, control characters made visible (figures/token-text.js).
import { getLens } from '../api.js';
import { tokenLabel } from '../figures/axes.js';
import { lensTable } from '../figures/lens.js';
import { escapeInvisible, visibleText } from '../figures/token-text.js';
import { errorMessage, loadModels, Lru, t } from '../page.js';

export const TOP_K = 5;

/** The `lens` URL parameter: a token position, or null. */
export function readLens(params) {
  const value = params.get('lens');
  return value !== null && /^\d{1,6}$/.test(value) ? Number(value) : null;
}

/** Write `lens` into `params` when the state has one. */
export function writeLens(state, params) {
  if (state.lens !== null && state.lens !== undefined) params.set('lens', String(state.lens));
  return params;
}

/** The position the lens reads for a state and an input of `n` tokens: lens, else focus, else the last token. */
export function lensPosition(state, n) {
  if (state.lens !== null && state.lens !== undefined && state.lens < n) return state.lens;
  if (state.focus !== null && state.focus !== undefined && state.focus < n) return state.focus;
  return n - 1;
}

const answers = new Lru(16); // sentence|position -> /lens answer

/** The model a state names (null: the server's default), from /api/v1/models. */
async function chosenModel(id) {
  const models = await loadModels();
  return models.find((m) => m.id === id) || (id === null ? models.find((m) => m.default) : null) || null;
}


const layerName = (layer) => (layer === 'embeddings' ? t('lens.embeddings') : t('lens.layer', { layer }));

function tokenSpan(text, className = 'lens-token') {
  const span = document.createElement('span');
  span.className = className;
  span.translate = false;
  span.textContent = text;
  return span;
}

/**
 * @param {{panel: HTMLElement, select: HTMLSelectElement, note: HTMLElement, head: HTMLTableRowElement,
 *   body: HTMLTableSectionElement, error: HTMLElement}} els
 * @param {{onPosition: (position: number) => void}} options the select chose a position
 */
export function createLensPanel(els, { onPosition }) {
  let seq = 0;
  let drawnKey = null;
  els.select.addEventListener('change', () => onPosition(Number(els.select.value)));

  function fillPositions(tokens, position) {
    const key = JSON.stringify(tokens.map((token) => [token.text, token.display]));
    if (els.select.dataset.tokens !== key) {
      els.select.dataset.tokens = key;
      els.select.replaceChildren(...tokens.map((token, i) => {
        const option = document.createElement('option');
        option.value = String(i);
        option.textContent = `${i} · ${tokenLabel(token)}`;
        return option;
      }));
    }
    els.select.value = String(position);
  }

  function drawNote(tokens, position, edited) {
    const parts = [t('lens.reading', { position }), ' ', tokenSpan(tokenLabel(tokens[position]))];
    const next = tokens[position + 1];
    parts.push(' ', next ? t('lens.continues') : t('lens.end'));
    if (next) parts.push(' ', tokenSpan(tokenLabel(next), 'lens-token is-actual'));
    if (edited) parts.push(' ', t('lens.unedited'));
    els.note.replaceChildren(...parts);
  }

  function drawTable(answer, tokens) {
    const next = tokens[answer.position + 1];
    const table = lensTable(answer, next ? next.text : null);
    const corner = document.createElement('th');
    corner.scope = 'col';
    corner.textContent = t('lens.layerColumn');
    els.head.replaceChildren(corner, ...Array.from({ length: table.columns }, (_, i) => {
      const th = document.createElement('th');
      th.scope = 'col';
      th.textContent = t('lens.rank', { rank: i + 1 });
      return th;
    }));
    els.body.replaceChildren(...table.rows.map((row) => {
      const tr = document.createElement('tr');
      tr.dataset.layer = String(row.layer);
      const name = document.createElement('th');
      name.scope = 'row';
      name.textContent = layerName(row.layer);
      tr.append(name);
      for (const cell of row.cells) {
        const td = document.createElement('td');
        td.className = 'lens-cell';
        td.dataset.id = String(cell.id);
        td.classList.toggle('is-final', cell.final);
        td.classList.toggle('is-actual', cell.actual);
        td.style.setProperty('--p', String(cell.probability));
        const probability = document.createElement('span');
        probability.className = 'lens-probability';
        probability.textContent = cell.shown;
        const token = tokenSpan(escapeInvisible(cell.text)); // a byte token's control character: figures/token-text.js
        token.title = t('lens.cellTitle', {
          token: visibleText(cell.token), id: cell.id, probability: cell.probability.toPrecision(4), logit: cell.logit.toFixed(3),
        });
        td.append(token, probability);
        tr.append(td);
      }
      return tr;
    }));
  }

  return {
    /** Show the lens for a state and its tokens (hidden for a model without an LM head). */
    async draw(state, tokens) {
      const ticket = ++seq;
      const model = await chosenModel(state.model).catch(() => null);
      if (ticket !== seq) return;
      if (!model || !model.lm_head || !tokens.length) {
        els.panel.hidden = true;
        drawnKey = null;
        return;
      }
      els.panel.hidden = false;
      const position = lensPosition(state, tokens.length);
      const key = JSON.stringify([state.text, model.id, position]);
      fillPositions(tokens, position);
      drawNote(tokens, position, Boolean(state.edit));
      if (key === drawnKey) return;
      els.panel.setAttribute('aria-busy', 'true');
      let answer;
      try {
        answer = await answers.load(key, () => getLens({ text: state.text, model: model.id, position, top_k: TOP_K }));
      } catch (error) {
        if (ticket !== seq) return;
        els.panel.setAttribute('aria-busy', 'false');
        els.error.hidden = false;
        els.error.textContent = errorMessage(error);
        return;
      }
      if (ticket !== seq) return;
      els.error.hidden = true;
      drawTable(answer, tokens);
      drawnKey = key;
      els.panel.dataset.position = String(answer.position);
      els.panel.setAttribute('aria-busy', 'false');
    },
  };
}
