// The explorer's token chips: buttons, so a click (or Enter) on one focuses its token (its row and
// column are highlighted on every map); the focused chip is pressed.
import { fillChip } from './tokens.js';

/**
 * @param {HTMLElement} container
 * @param {{onFocus: (index: number|null) => void}} options a click on the focused chip clears the focus
 */
export function createTokenChips(container, { onFocus }) {
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
    },
    focus(index) {
      focused = index;
      for (const chip of container.querySelectorAll('button.chip')) {
        chip.setAttribute('aria-pressed', String(Number(chip.dataset.index) === index));
      }
    },
  };
}
