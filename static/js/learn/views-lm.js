// Grow your own model (chapter 17): the models trained on this server from a learner's text (GET
// /api/v1/labs/lm/models), each with links that open it in the explorer and /steps on the chapter's sentence,
// where every character is one token; none yet: the way to /lm, which trains one. Nothing is trained here.
import { explorerLink, stepsLink } from '../figures/lm.js';
import { t, tNodes } from '../i18n/index.js';
import { el } from './dom.js';

/** GET /api/v1/labs/lm/models' list, or null when the server could not be asked. */
async function trainedModels() {
  try {
    const response = await fetch('/api/v1/labs/lm/models', { headers: { Accept: 'application/json' } });
    return response.ok ? (await response.json()).models : null;
  } catch {
    return null;
  }
}

export async function lmView(root, state, ctx) {
  const models = await trainedModels();
  if (!ctx.current()) return;
  const lang = new URLSearchParams(window.location.search).get('lang');
  const text = state.text || t('lm.defaultSentence');
  const list = el('ul', { id: 'learn-lm-models', class: 'learn-lm-models' }, (models ?? []).map((model) => el('li', {
    dataset: { model: model.id },
  }, [
    el('span', {}, tNodes('learn.lm.item', { id: model.id, layers: model.n_layers, heads: model.n_heads }, ['id'])), ' ',
    el('a', { href: explorerLink(model.id, text, 0, 0, lang), text: t('lm.heads.explorer') }), ' ',
    el('a', { href: stepsLink(model.id, text, 0, 0, lang), text: t('lm.heads.steps') }),
  ])));
  root.replaceChildren(el('h2', { text: t('learn.lm.heading') }), list);
  ctx.caption(models?.length ? 'learn.lm.caption' : 'learn.lm.none', { count: models?.length ?? 0 });
  ctx.links({});
}
