// The explorer's token chips: buttons, so a click (or Enter) on one focuses its token (its row and
// column are highlighted on every map); the focused chip is pressed. The key of token kinds beside them
// (the panel's .key-list) shows only the kinds the input has: a GPT-2 text has no sentence B and no
// special token. (Its "unknown" item is the page's: it goes with the note on unknown tokens.)
import { fillChip } from './tokens.js';

/** Whether the input has tokens of the kind a key item's sample chip shows (null: an item this view leaves alone). */
function kindOccurs(sample, tokens) {
  if (sample.classList.contains('chip-unknown')) return null;
  if (sample.classList.contains('chip-special')) return tokens.some((token) => token.special);
  if (sample.classList.contains('chip-segment-1')) return tokens.some((token) => token.segment === 1);
  return tokens.some((token) => !token.special && token.segment !== 1); // sentence A
}

/** Show the key items (li > .chip-sample) of the kinds `tokens` has. */
function showKinds(key, tokens) {
  for (const item of key.children) {
    const sample = item.querySelector('.chip-sample');
    const occurs = sample ? kindOccurs(sample, tokens) : null;
    if (occurs !== null) item.hidden = !occurs;
  }
}

/**
 * @param {HTMLElement} container
 * @param {{onFocus: (index: number|null) => void}} options a click on the focused chip clears the focus
 */
export function createTokenChips(container, { onFocus }) {
  const key = container.closest('section')?.querySelector('.key-list') ?? null;
  let focused = null;
  container.addEventListener('click', (event) => {
    const chip = event.target.closest('button.chip');
    if (!chip || !container.contains(chip)) return;
    const index = Number(chip.dataset.index);
    onFocus(index === focused ? null : index);
  });

  return {
    render(tokens) {
      container.replaceChildren(...tokens.map((token, index) => {
        const chip = fillChip(document.createElement('button'), token, index);
        chip.type = 'button';
        chip.dataset.index = String(index);
        chip.setAttribute('aria-pressed', 'false');
        return chip;
      }));
      focused = null;
      if (key) showKinds(key, tokens);
    },
    focus(index) {
      focused = index;
      for (const chip of container.querySelectorAll('button.chip')) {
        chip.setAttribute('aria-pressed', String(Number(chip.dataset.index) === index));
      }
    },
  };
}
