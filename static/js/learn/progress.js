// What the learning path keeps in the browser (localStorage only, never sent anywhere): the chapters
// a learner has opened and the sentence they chose. Pure: the storage is passed in (window.localStorage
// in the page, a stand-in in tests), and a storage that refuses (disabled, full) is treated as empty.

export const CHAPTERS = 17; // learn/chapters.js lists them
// The chapters seen, by number. Twelve chapters replaced the first nine, whose numbers meant other chapters:
// progress kept under the first key ('attnscope.learn.seen') is not read. Chapters 13 to 16 came after the
// twelve, whose numbers kept their meaning: the key stayed.
export const SEEN_KEY = 'attnscope.learn.seen.12';
export const TEXT_KEY = 'attnscope.learn.text';

const isChapter = (n) => Number.isInteger(n) && n >= 1 && n <= CHAPTERS;

/** The chapters seen, sorted; anything unreadable in storage counts as nothing seen. */
export function readSeen(storage) {
  let raw = null;
  try {
    raw = storage.getItem(SEEN_KEY);
  } catch {
    return [];
  }
  try {
    const list = JSON.parse(raw ?? '[]');
    return Array.isArray(list) ? [...new Set(list.filter(isChapter))].sort((a, b) => a - b) : [];
  } catch {
    return [];
  }
}

/** Record chapter `n` as seen; returns the chapters seen. */
export function markSeen(storage, n) {
  const seen = readSeen(storage);
  if (!isChapter(n) || seen.includes(n)) return seen;
  const next = [...seen, n].sort((a, b) => a - b);
  try {
    storage.setItem(SEEN_KEY, JSON.stringify(next));
  } catch {
    // storage refused: progress lasts as long as the page
  }
  return next;
}

/** Forget every chapter seen. */
export function resetSeen(storage) {
  try {
    storage.removeItem(SEEN_KEY);
  } catch {
    // nothing stored
  }
}

/** The learner's last sentence, or null. */
export function readText(storage) {
  try {
    const text = storage.getItem(TEXT_KEY);
    return typeof text === 'string' && text.trim() ? text : null;
  } catch {
    return null;
  }
}

export function storeText(storage, text) {
  try {
    if (text && text.trim()) storage.setItem(TEXT_KEY, text);
  } catch {
    // storage refused: the sentence still travels in the URL
  }
}

/** The first chapter not seen yet (1 when none is seen, null when all are). */
export function nextUnseen(seen) {
  for (let n = 1; n <= CHAPTERS; n += 1) if (!seen.includes(n)) return n;
  return null;
}
