// The status line and the loading indicator.

/** Show a neutral message, or an error (kind 'error'), as text. */
export function showStatus(element, message, kind = 'info') {
  element.textContent = message;
  element.classList.toggle('is-error', kind === 'error');
}

export function setLoading({ indicator, region }, loading) {
  indicator.hidden = !loading;
  if (region) region.setAttribute('aria-busy', loading ? 'true' : 'false');
}
