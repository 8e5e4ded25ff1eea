// The notebook widget's entry (anywidget's _esm, attnscope/notebook.py). anywidget loads this file as one
// module from a blob or data URL, where the relative imports of the pages' modules cannot resolve. So the
// kernel sends those modules' sources (trait _modules: [path, source, [[specifier, path], ...]] with every
// module after the modules it imports) and this entry turns each into a blob URL, its import specifiers
// replaced by the blob URLs of the modules they name. One set of blob URLs per set of sources is kept for
// the page, so that every widget of a notebook shares one copy of each module (and of its state). The
// same file runs in a page written by widget.save_html (static/js/widget/standalone.js). Nothing is
// fetched from the network.

const graphs = new Map(); // a key of the sources -> Promise of the view module

function quoted(specifier) {
  return [`'${specifier}'`, `"${specifier}"`];
}

/** The source with each `from '<specifier>'` and `import '<specifier>'` pointing at its blob URL. */
function linked(source, imports, urls) {
  let out = source;
  for (const [specifier, path] of imports) {
    const url = urls.get(path);
    if (!url) throw new Error(`attnscope: ${path} is not loaded before the modules that import it`); // ui-text: not UI (a bug report)
    for (const text of quoted(specifier)) {
      out = out.split(`from ${text}`).join(`from '${url}'`).split(`import ${text}`).join(`import '${url}'`);
    }
  }
  return out;
}

function keyOf(modules) {
  let hash = 0;
  for (const [path, source] of modules) {
    for (const text of [path, source]) {
      for (let i = 0; i < text.length; i += 1) hash = (Math.imul(hash, 31) + text.charCodeAt(i)) | 0;
    }
  }
  return `${modules.length}:${hash}`;
}

/** Import the module `entry` of `modules` (in dependency order), each module once per page. */
export function loadModules(modules, entry) {
  const key = `${keyOf(modules)}:${entry}`;
  if (!graphs.has(key)) {
    const urls = new Map();
    for (const [path, source, imports] of modules) {
      const blob = new Blob([linked(source, imports, urls)], { type: 'text/javascript' });
      urls.set(path, URL.createObjectURL(blob));
    }
    if (!urls.has(entry)) throw new Error(`attnscope: no module ${entry}`); // ui-text: not UI (a bug report)
    graphs.set(key, import(urls.get(entry)));
  }
  return graphs.get(key);
}

const ENTRY = 'widget/view.js';

async function render({ model, el }) {
  const view = await loadModules(model.get('_modules'), ENTRY);
  return view.mountWidget(el, model);
}

export default { render };
