// Form controls: the layer and head pickers (the model picker is page.js fillModels).

function option(value, text) {
  const element = document.createElement('option');
  element.value = String(value);
  element.textContent = text;
  return element;
}

/** Fill a layer or head <select> with the given indices (unchanged if already the same). */
export function fillIndices(select, indices) {
  const values = indices.map(String);
  const current = Array.from(select.options, (element) => element.value);
  if (current.join(',') !== values.join(',')) select.replaceChildren(...values.map((value) => option(value, value)));
}
