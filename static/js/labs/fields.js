// A lab page's whole-number settings read from its form: each field's text a whole number within its limits.

/**
 * @param {Record<string, HTMLInputElement>} fields the inputs by setting name
 * @param {string[]} names the whole-number settings, in the order they are checked
 * @param {Record<string, [number, number]>} limits each one's [low, high]
 * @param {(name: string, low: number, high: number) => string} message what to say of the first field that is not
 * @returns {{values: Record<string, number>} | {name: string, message: string}}
 */
export function readWholeFields(fields, names, limits, message) {
  const values = {};
  for (const name of names) {
    const text = fields[name].value.trim();
    const [low, high] = limits[name];
    if (!/^\d+$/.test(text) || Number(text) < low || Number(text) > high) return { name, message: message(name, low, high) };
    values[name] = Number(text);
  }
  return { values };
}
