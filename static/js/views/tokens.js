// Token chips. Token text only ever reaches the DOM through textContent.
import { insertedSpace, tokenLabel } from '../figures/axes.js';
import { t } from '../i18n/index.js';

/** The chip's tooltip: where the token comes from, and what the model sees when it does not know it. */
export function describeToken(token, index) {
  if (token.special) return t('tokens.describeSpecial', { index });
  const where = { index, segment: token.segment === 1 ? 'B' : 'A', start: token.start, end: token.end };
  if (token.unknown) return t('tokens.describeUnknown', { ...where, display: token.display, text: token.text });
  if (insertedSpace(token)) return t('tokens.describeInsertedSpace', where);
  if (token.display === '') return t('tokens.describeBytes', where);
  return t('tokens.describeText', where);
}

/**
 * Fill `chip` (a span or button) with a token: its readable form (`display`; for a token the model
 * does not know, the characters it stands for, marked ⟨UNK⟩), its kind as classes, its origin as a title.
 */
export function fillChip(chip, token, index) {
  chip.classList.add('chip');
  chip.translate = false;
  if (token.segment === 1) chip.classList.add('chip-segment-1');
  if (token.special) chip.classList.add('chip-special');
  const text = document.createElement('span');
  text.textContent = tokenLabel({ ...token, unknown: false }); // the ⟨UNK⟩ mark is a span of its own
  chip.replaceChildren(text);
  if (token.unknown) {
    chip.classList.add('chip-unknown');
    const mark = document.createElement('span');
    mark.className = 'chip-mark';
    mark.textContent = '⟨UNK⟩';
    chip.append(mark);
  }
  chip.title = describeToken(token, index);
  return chip;
}

export function renderTokens(container, tokens) {
  container.replaceChildren(...tokens.map((token, index) => fillChip(document.createElement('span'), token, index)));
}
