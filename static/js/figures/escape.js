// Plotly parses a pseudo-HTML subset (<b>, <i>, <br>, <a href>, <span style>)
// in tick labels, hover text, titles and annotations. Any text that comes from
// a user or a tokenizer goes through escapeForPlotly before it reaches Plotly.
//
// Plotly decodes only a few named entities (amp, lt, gt, nbsp, ...) and numeric
// ones, so quotes use numeric references.
const ENTITIES = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&#34;', "'": '&#39;' };

export function escapeForPlotly(text) {
  return String(text).replace(/[&<>"']/g, (char) => ENTITIES[char]);
}
