// Tokens as buttons: clicking one chooses the query token. Each chip shows the token's readable
// form, marked when the model does not know it (views/tokens.js, as in the explorer); token text
// only ever reaches the DOM through textContent.
import { t } from '../i18n/index.js';
import { describeToken, fillChip } from './tokens.js';

/**
 * @param {HTMLElement} container
 * @param {{onSelect: (index: number) => void}} options
 */
export function createTokenPicker(container, { onSelect }) {
  container.addEventListener('click', (event) => {
    const button = event.target.closest('button.chip');
    if (button && container.contains(button)) onSelect(Number(button.dataset.index));
  });

  /** Draw the tokens (from /trace: {text, display, unknown, special, segment}) with `selected` pressed. */
  function render(tokens, selected) {
    const buttons = tokens.map((token, index) => {
      const button = fillChip(document.createElement('button'), token, index);
      button.type = 'button';
      button.dataset.index = String(index);
      button.title = t('steps.tokens.pick', { token: describeToken(token, index) });
      button.setAttribute('aria-pressed', index === selected ? 'true' : 'false');
      return button;
    });
    container.replaceChildren(...buttons);
    const chosen = buttons[selected];
    // A long sentence scrolls inside its box: keep the query in view (without scrolling the page),
    // once the row around the box is laid out.
    requestAnimationFrame(() => {
      if (!chosen || !chosen.isConnected || container.scrollHeight <= container.clientHeight) return;
      const offset = chosen.getBoundingClientRect().top - container.getBoundingClientRect().top;
      container.scrollTop += offset - (container.clientHeight - chosen.offsetHeight) / 2;
    });
  }

  return { render };
}
