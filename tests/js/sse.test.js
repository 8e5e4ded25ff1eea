// The server-sent events parser (static/js/sse.js) that reads POST /api/v1/generate's answer: events whole
// however the text is cut into chunks, comments and pings skipped, data lines joined, every line end.
import test from 'node:test';
import assert from 'node:assert/strict';

import { createSseParser, readEventStream } from '../../static/js/sse.js';

/** Every event the parser dispatches for these pieces of text, as [event, data]. */
function parse(...pieces) {
  const found = [];
  const parser = createSseParser((e) => found.push([e.event, e.data]));
  for (const piece of pieces) parser.push(piece);
  parser.end();
  return found;
}

// What sse-starlette writes: CRLF line ends, a ping comment every 15 s.
const STREAM = 'event: prompt\r\ndata: {"tokens":[]}\r\n\r\n: ping - 2026-12-02 16:00:00\r\n\r\n'
  + 'event: token\r\ndata: {"index":3,"token":{"display":"é"}}\r\n\r\nevent: done\r\ndata: {"tokens":1}\r\n\r\n';
const EXPECTED = [['prompt', '{"tokens":[]}'], ['token', '{"index":3,"token":{"display":"é"}}'], ['done', '{"tokens":1}']];

test('a whole stream: named events in order, the ping comment skipped', () => {
  assert.deepEqual(parse(STREAM), EXPECTED);
});

test('the same events whatever the chunks: every cut point, one character at a time', () => {
  for (let cut = 0; cut <= STREAM.length; cut += 1) {
    assert.deepEqual(parse(STREAM.slice(0, cut), STREAM.slice(cut)), EXPECTED, `cut at ${cut}`);
  }
  assert.deepEqual(parse(...STREAM), EXPECTED);
  // a CR ending one chunk and its LF starting the next are one line end, not a blank line between
  assert.deepEqual(parse('data: a\r', '\ndata: b\r\n\r\n'), [['message', 'a\nb']]);
});

test('multi-line data joins with newlines; LF, CR and CRLF line ends; one space after the colon dropped', () => {
  assert.deepEqual(parse('data: one\ndata:two\ndata:  three\n\n'), [['message', 'one\ntwo\n three']]);
  assert.deepEqual(parse('event: x\rdata: a\rdata: b\r\r'), [['x', 'a\nb']]);
  assert.deepEqual(parse('data\n\n'), [['message', '']]); // a field with no colon: an empty value
  assert.deepEqual(parse('data: {"a": "b: c"}\n\n'), [['message', '{"a": "b: c"}']]);
});

test('comments, pings, unknown fields and events without data dispatch nothing; the name resets', () => {
  assert.deepEqual(parse(': ping\n\n:\n\nretry: 100\nfoo: bar\n\nevent: lonely\n\n'), []);
  assert.deepEqual(parse('event: a\ndata: 1\n\ndata: 2\n\n'), [['a', '1'], ['message', '2']]);
  // an event without its blank line when the stream ends is dropped
  assert.deepEqual(parse('data: 1\n\ndata: cut off'), [['message', '1']]);
});

test('a byte order mark at the start is dropped; ids are kept', () => {
  const found = [];
  const parser = createSseParser((e) => found.push(e));
  parser.push('\uFEFFid: 7\nevent: token\ndata: x\n\n');
  assert.deepEqual(found, [{ event: 'token', data: 'x', id: '7' }]);
});

test('readEventStream decodes characters split across byte chunks', async () => {
  const bytes = new TextEncoder().encode(STREAM);
  const at = bytes.indexOf(0xc3); // é's first byte: the chunk ends inside the character
  assert.ok(at > 0);
  const chunks = [bytes.slice(0, at + 1), bytes.slice(at + 1, at + 5), bytes.slice(at + 5)];
  const body = new ReadableStream({
    start(controller) {
      for (const chunk of chunks) controller.enqueue(chunk);
      controller.close();
    },
  });
  const found = [];
  await readEventStream(body, (e) => found.push([e.event, e.data]));
  assert.deepEqual(found, EXPECTED);
  assert.equal(JSON.parse(found[1][1]).token.display, 'é');
});

test('readEventStream rejects as its stream does (an aborted fetch)', async () => {
  let pulls = 0;
  const body = new ReadableStream({
    pull(controller) {
      pulls += 1;
      if (pulls === 1) controller.enqueue(new TextEncoder().encode('event: prompt\ndata: 1\n\n'));
      else controller.error(new DOMException('stopped', 'AbortError'));
    },
  });
  const found = [];
  await assert.rejects(readEventStream(body, (e) => found.push(e.event)), { name: 'AbortError' });
  assert.deepEqual(found, ['prompt']);
});

test('readEventStream stops at once when its signal aborts, even while the stream holds back', async () => {
  let cancelled = false;
  let pulls = 0;
  const body = new ReadableStream({
    pull(controller) {
      pulls += 1;
      if (pulls === 1) controller.enqueue(new TextEncoder().encode('event: token\ndata: 1\n\n'));
      return new Promise(() => {}); // never more: only the abort ends the read
    },
    cancel() { cancelled = true; },
  });
  const controller = new AbortController();
  const found = [];
  const reading = readEventStream(body, (e) => {
    found.push(e.event);
    controller.abort();
  }, controller.signal);
  await assert.rejects(reading, { name: 'AbortError' });
  assert.deepEqual(found, ['token']);
  assert.ok(cancelled);
  const late = new AbortController();
  late.abort();
  await assert.rejects(readEventStream(new ReadableStream(), () => {}, late.signal), { name: 'AbortError' });
});
