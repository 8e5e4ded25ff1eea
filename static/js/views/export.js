// Export of what is on screen: a figure as PNG or SVG (Plotly's own renderer, at twice the size on
// screen for PNG) and its numbers as JSON or CSV with what they are (model, text, tokens, layer,
// head, kind, edit, attnscope version). Files are made in the page and saved through a blob: URL
// on an <a download>: nothing is sent anywhere, and the page's Content-Security-Policy allows it
// (a download is not a fetch, a script or an image).

const PNG_SCALE = 2;
let versionPromise = null;

/**
 * attnscope's version as the server states it (GET /healthz `version`), asked once per page;
 * null when the server does not say.
 * @returns {Promise<string|null>}
 */
export function attnscopeVersion() {
  versionPromise ??= fetch('/healthz', { headers: { Accept: 'application/json' } })
    .then((response) => (response.ok ? response.json() : null))
    .then((body) => (body && typeof body.version === 'string' ? body.version : null))
    .catch(() => null);
  return versionPromise;
}

/** Save `blob` as `filename` through a temporary blob: URL. */
export function saveBlob(blob, filename) {
  const url = URL.createObjectURL(blob);
  const link = document.createElement('a');
  link.href = url;
  link.download = filename;
  link.hidden = true;
  document.body.append(link);
  link.click();
  link.remove();
  setTimeout(() => URL.revokeObjectURL(url), 60_000); // the download has started long before
}

/**
 * Download a drawn Plotly figure as PNG or SVG through Plotly.downloadImage (it renders the figure
 * again off screen: the file holds exactly what the figure holds, not a screenshot).
 * @param {HTMLElement} graphDiv an element Plotly has drawn into
 * @param {'png'|'svg'} format
 * @param {string} filename without extension
 */
export function exportFigure(graphDiv, format, filename) {
  if (format !== 'png' && format !== 'svg') throw new Error(`unknown figure format ${format}`); // ui-text: not UI (a bug report)
  const { width, height } = graphDiv.getBoundingClientRect();
  return window.Plotly.downloadImage(graphDiv, {
    format,
    filename,
    width: Math.max(1, Math.round(width)),
    height: Math.max(1, Math.round(height)),
    scale: format === 'png' ? PNG_SCALE : 1,
  });
}

// A cell a spreadsheet would read as a formula starts with one of these: it is prefixed with '.
const FORMULA = /^[=+\-@\t\r]/;
const NEEDS_QUOTES = /[",\r\n]/;

/** One CSV field (RFC 4180): quoted when it holds a comma, quote or line break. */
export function csvField(value) {
  let text = String(value);
  if (FORMULA.test(text)) text = `'${text}`;
  return NEEDS_QUOTES.test(text) || text !== text.trim() ? `"${text.replaceAll('"', '""')}"` : text;
}

/**
 * The text of an export of numbers.
 * JSON: {meta, rows, cols, matrix}. CSV: one `# key: value` line per metadata entry (the value in
 * JSON), then a header row of the column labels and one row per matrix row, its label first.
 * @param {'json'|'csv'} format
 * @param {{meta: object, rows: string[], cols: string[], matrix: ArrayLike<ArrayLike<number>>}} numbers
 */
export function numbersText(format, { meta, rows, cols, matrix }) {
  const plain = Array.from(matrix, (row) => Array.from(row, Number));
  if (format === 'json') return `${JSON.stringify({ meta, rows, cols, matrix: plain })}\n`;
  if (format !== 'csv') throw new Error(`unknown numbers format ${format}`); // ui-text: not UI (a bug report)
  const lines = Object.entries(meta).map(([key, value]) => `# ${key}: ${JSON.stringify(value ?? null)}`);
  lines.push(['query \\ key', ...cols].map(csvField).join(',')); // ui-text: not UI (the file's corner cell)
  plain.forEach((row, r) => lines.push([csvField(rows[r]), ...row.map(String)].join(',')));
  return `${lines.join('\r\n')}\r\n`;
}

/**
 * Download the numbers on screen as JSON or CSV.
 * @param {'json'|'csv'} format
 * @param {{meta: {model: string, text: string, pair: string|null, tokens: object[], layer: number,
 *   head: number, kind: string, edit: object|null, version: string|null}, rows: string[], cols: string[],
 *   matrix: ArrayLike<ArrayLike<number>>, filename: string}} numbers filename without extension
 */
export function exportNumbers(format, { meta, rows, cols, matrix, filename }) {
  const text = numbersText(format, { meta, rows, cols, matrix });
  const type = format === 'json' ? 'application/json' : 'text/csv;charset=utf-8';
  saveBlob(new Blob([text], { type }), `${filename}.${format}`);
  return text;
}
