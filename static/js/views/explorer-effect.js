// What an edit changes, written under the edit banner from POST /api/v1/edit/effect: for a ProbSparse edit how
// many queries kept their softmax row and what the others got, then the final hidden state, each later layer's
// rows and, for a model with an LM head, the next token. A ProbSparse edit's active queries are also what the
// large map marks (activeRows).
import { getEditEffect } from '../api.js';
import { tokenLabel } from '../figures/axes.js';
import { t } from '../i18n/index.js';
import { editBody } from './explorer-state.js';

const fixed = (x, digits = 3) => x.toFixed(digits);
const percent = (p) => `${(100 * p).toFixed(1)} %`;
const mean = (list) => list.reduce((sum, x) => sum + x, 0) / list.length;
const quoted = (text) => t('explorer.effect.quoted', { text });

/** The sentences that say what the edit changed, in the order drawn; `effect` as the API answers it. */
export function effectSentences(effect) {
  const lines = [];
  const sparse = effect.probsparse;
  const n = effect.tokens.length;
  if (sparse) {
    const u = sparse.active[0].length;
    lines.push(u >= n
      ? t('explorer.effect.probsparseFull', { layer: effect.layers[0], factor: sparse.factor, n })
      : t(`explorer.effect.probsparse.${sparse.lazy}`, {
        layer: effect.layers[0], factor: sparse.factor, u, n, lazy: n - u,
      }));
  }
  const top = effect.hidden_by_token.reduce((best, x, i) => (x > effect.hidden_by_token[best] ? i : best), 0);
  lines.push(t('explorer.effect.hidden', {
    relative: fixed(effect.hidden_relative), token: quoted(tokenLabel(effect.tokens[top])),
    most: fixed(effect.hidden_by_token[top]),
  }));
  const layers = effect.layers.map((layer, i) => t('explorer.effect.layerItem', {
    layer, change: fixed(mean(effect.row_change_mean[i])),
  }));
  lines.push(t('explorer.effect.layers', { list: layers.join(t('explorer.effect.separator')) }));
  const next = effect.next_token;
  if (next) {
    const before = quoted(next.before.display);
    lines.push(next.before.id === next.after.id
      ? t('explorer.effect.nextSame', {
        token: before, p: percent(next.before.probability), q: percent(next.after.probability), kl: fixed(next.kl),
      })
      : t('explorer.effect.nextChanged', {
        before, after: quoted(next.after.display), p: percent(next.before.probability),
        q: percent(next.after.probability), left: percent(next.before_probability_after), kl: fixed(next.kl),
      }));
  }
  return lines;
}

/** A ProbSparse effect's active queries of `head` in `layer` (token indices), or null when it has none there. */
export function activeRows(effect, layer, head) {
  const sparse = effect && effect.probsparse;
  if (!sparse || effect.layers[0] !== layer) return null;
  const at = sparse.heads.indexOf(head);
  return at < 0 ? null : sparse.active[at];
}

/** The effect panel: `load(state)` fetches a state's effect (once per sentence and edit), `draw` writes it. */
export function createEffect(el) {
  let key = null;
  let pending = null;
  return {
    /** @returns {Promise<object|null>} the effect of the state's edit; null without one */
    load(state) {
      if (!state.edit) return Promise.resolve(null);
      const body = { text: state.text, text_pair: state.pair, model: state.model, edit: editBody(state.edit) };
      const wanted = JSON.stringify(body);
      if (wanted !== key) {
        key = wanted;
        pending = getEditEffect(body);
        pending.catch(() => { key = null; }); // a failure is asked again next time
      }
      return pending;
    },
    draw(effect) {
      el.hidden = !effect;
      if (!effect) return;
      el.replaceChildren(...effectSentences(effect).map((line) => {
        const p = document.createElement('p');
        p.textContent = line;
        return p;
      }));
    },
  };
}
