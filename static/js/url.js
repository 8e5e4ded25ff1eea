// Reading page state from the URL.

/** A non-negative integer from a URL parameter, or 0 (each page checks it against the model later). */
export function indexParam(value) {
  return value !== null && /^\d{1,6}$/.test(value) ? Number(value) : 0;
}
