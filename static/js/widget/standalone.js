// The page widget.save_html writes (attnscope/notebook.py): the widget without a kernel. The widget's state
// (every trait, the buffers in base64) and the entry's source are JSON in the page; this script stands in for
// anywidget's model (get, set, on, off, save_changes, kept in the page) and renders the entry into
// #attnscope-widget. Clicks change the state here only. Nothing is fetched: every module is in the page.

function read(id) {
  return JSON.parse(document.getElementById(id).textContent);
}

function bytes(base64) {
  const text = atob(base64);
  const out = new Uint8Array(text.length);
  for (let i = 0; i < text.length; i += 1) out[i] = text.charCodeAt(i);
  return new DataView(out.buffer);
}

function pageModel(state, buffers) {
  const values = { ...state };
  for (const name of buffers) values[name] = bytes(values[name]);
  const listeners = new Map();
  const changed = new Set();
  return {
    get: (name) => values[name],
    set(name, value) {
      if (values[name] === value) return;
      values[name] = value;
      changed.add(name);
    },
    save_changes() {
      const names = [...changed];
      changed.clear();
      for (const name of names) for (const handler of listeners.get(`change:${name}`) ?? []) handler();
    },
    on(events, handler) {
      for (const event of events.split(' ')) {
        if (!listeners.has(event)) listeners.set(event, new Set());
        listeners.get(event).add(handler);
      }
    },
    off(events, handler) {
      for (const event of events.split(' ')) listeners.get(event)?.delete(handler);
    },
  };
}

const { state, buffers, entry } = read('attnscope-state');
const url = URL.createObjectURL(new Blob([entry], { type: 'text/javascript' }));
const widget = await import(url);
const model = pageModel(state, buffers);
await widget.default.render({ model, el: document.getElementById('attnscope-widget') });
