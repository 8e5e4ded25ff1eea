// Token chips. Token text only ever reaches the DOM through textContent.

function describe(token, index) {
  const parts = [`token ${index}`];
  if (token.special) parts.push('special token added by the tokenizer');
  else parts.push(`sentence ${token.segment === 1 ? 'B' : 'A'}, characters ${token.start}–${token.end}`);
  return parts.join(', ');
}

export function renderTokens(container, tokens) {
  const chips = tokens.map((token, index) => {
    const chip = document.createElement('span');
    chip.className = 'chip';
    if (token.segment === 1) chip.classList.add('chip-segment-1');
    if (token.special) chip.classList.add('chip-special');
    chip.textContent = token.text;
    chip.title = describe(token, index);
    return chip;
  });
  container.replaceChildren(...chips);
}
