// Tokens as buttons: clicking one chooses the query token. Token text only ever
// reaches the DOM through textContent.

/**
 * @param {HTMLElement} container
 * @param {{onSelect: (index: number) => void}} options
 */
export function createTokenPicker(container, { onSelect }) {
  container.addEventListener('click', (event) => {
    const button = event.target.closest('button.chip');
    if (button && container.contains(button)) onSelect(Number(button.dataset.index));
  });

  /** Draw the tokens (from /trace: {text, special, segment}) with `selected` pressed. */
  function render(tokens, selected) {
    const buttons = tokens.map((token, index) => {
      const button = document.createElement('button');
      button.type = 'button';
      button.className = 'chip';
      if (token.segment === 1) button.classList.add('chip-segment-1');
      if (token.special) button.classList.add('chip-special');
      button.dataset.index = String(index);
      button.textContent = token.text;
      button.title = `token ${index}: make it the query`;
      button.setAttribute('aria-pressed', index === selected ? 'true' : 'false');
      return button;
    });
    container.replaceChildren(...buttons);
  }

  return { render };
}
