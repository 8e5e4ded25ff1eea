// Form controls: the model, layer and head pickers and the text inputs.

function option(value, text, title = '') {
  const element = document.createElement('option');
  element.value = String(value);
  element.textContent = text;
  if (title) element.title = title;
  return element;
}

/** "all-MiniLM-L6-v2 (sentence-transformers, …)" -> "all-MiniLM-L6-v2" */
function shortName(model) {
  const name = model.name || model.id;
  const cut = name.indexOf(' (');
  return cut > 0 ? name.slice(0, cut) : name;
}

/** Fill the model <select> from /api/v1/models; select `selectedId` or the default. */
export function fillModels(select, models, selectedId) {
  select.replaceChildren(...models.map((model) => option(model.id, shortName(model), model.name)));
  const chosen = models.find((model) => model.id === selectedId) || models.find((model) => model.default);
  if (chosen) select.value = chosen.id;
}

/** Fill a layer or head <select> with the given indices (unchanged if already the same). */
export function fillIndices(select, indices) {
  const values = indices.map(String);
  const current = Array.from(select.options, (element) => element.value);
  if (current.join(',') !== values.join(',')) select.replaceChildren(...values.map((value) => option(value, value)));
}
