// The few browser globals that static/js/i18n/index.js touches when it is imported, so that the page's
// pure modules (which import t() from it) load in Node 20. Import this module first in every test file:
// ES modules are evaluated in import order, so these exist before any page module runs.
//
// Nothing else of the browser is faked: a module that needs more (canvas, real DOM) is tested in Chromium.
// With no ?lang= parameter, nothing stored and an English navigator, the page's language is English.

/** An in-memory stand-in for window.localStorage (the part of the Storage interface the page uses). */
function memoryStorage() {
  const items = new Map();
  return {
    getItem: (key) => (items.has(String(key)) ? items.get(String(key)) : null),
    setItem: (key, value) => { items.set(String(key), String(value)); },
    removeItem: (key) => { items.delete(String(key)); },
    clear: () => { items.clear(); },
  };
}

globalThis.window = {
  location: { search: '', href: 'http://127.0.0.1/' },
  localStorage: memoryStorage(),
};

// Node 20 has no navigator (Node 21 added a read-only one): define it rather than assign.
Object.defineProperty(globalThis, 'navigator', {
  value: { languages: ['en-US'], language: 'en-US' },
  configurable: true,
  writable: true,
});

// index.js translates the document once at import (start()): an empty document with an <html> element.
globalThis.document = {
  documentElement: { lang: '', classList: { remove() {} } },
  querySelectorAll: () => [],
};
