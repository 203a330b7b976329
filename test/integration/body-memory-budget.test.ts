import { randomBytes } from 'node:crypto';
import { expect } from 'chai';
import { request } from 'undici';
import { type TestGateway, useGateway } from '../helpers/gateway';
import { jsonHeaders } from '../helpers/reliability';
import { TestUpstream } from '../helpers/upstream';
import { waitFor } from '../helpers/wait';

/**
 * The reservation each request body takes against server.max_buffered_bytes (intake/body-intake.ts) comes back however
 * the request ends, and only bodies held in memory take one. Read from the gateway's own counter (the
 * tollgate_buffered_request_bytes gauge).
 */
describe('request bodies held in memory: what is reserved, and that it always comes back', () => {
  const upstream = new TestUpstream();
  let gw: TestGateway;
  useGateway(
    upstream,
    (g) => (gw = g),
    `
server: { body_limit: 1mb, max_buffered_bytes: 8mb, upload_spool_from: 256kb }
providers:
  closed: { type: openai-compatible, base_url: "http://127.0.0.1:9/v1", prefixes: [closed-] }
`,
  );

  const held = () => gw.gateway.bufferedBodies.held;
  const nothingHeld = () => waitFor(() => held() === 0, 5000, 'every reservation released');
  const post = (body: string, signal?: AbortSignal) =>
    request(`${gw.url}/v1/chat/completions`, { method: 'POST', headers: jsonHeaders(gw), body, signal });
  /** A stream whose second chunk the provider holds back long after the test is done with it. */
  const stalledStream = (contentType: string) =>
    upstream.respondWith(() => ({
      headers: { 'content-type': contentType },
      body: [Buffer.from('data: {"choices":[]}\n\n'), Buffer.from('data: [DONE]\n\n')],
      delayMs: 30_000,
    }));

  it('a JSON body is reserved twice while its request is in flight; a client that leaves mid-stream gives it back', async () => {
    stalledStream('text/event-stream');
    const body = JSON.stringify({ model: 'gpt-4o-mini', stream: true, messages: [{ role: 'user', content: 'x' }] });
    const abort = new AbortController();
    const res = await post(body, abort.signal);
    expect(res.statusCode).to.equal(200);
    await res.body[Symbol.asyncIterator]().next(); // the first event arrived: the request is mid-stream
    expect(held(), 'its bytes and its parsed form').to.equal(2 * Buffer.byteLength(body));
    abort.abort();
    await nothingHeld();
  });

  it('every way a request ends gives its reservation back', async () => {
    const chat = (extra: object = {}) =>
      JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }], ...extra });
    const outcomes: [string, () => Promise<number>][] = [
      ['answered', () => post(chat()).then(statusOf)],
      ['streamed to its end', () => post(chat({ stream: true })).then(statusOf)],
      ['invalid JSON', () => post('{"model":').then(statusOf)],
      ['a model name too long', () => post(chat({ model: 'm'.repeat(300) })).then(statusOf)],
      ['over the body limit', () => post(chat({ pad: 'x'.repeat(2 * 2 ** 20) })).then(statusOf)],
      ['an unreachable provider', () => post(chat({ model: 'closed-1' })).then(statusOf)],
      [
        'a provider error',
        () => {
          upstream.respondWith(() => ({ status: 500, body: Buffer.from('{"error":{"message":"boom"}}') }));
          return post(chat()).then(statusOf);
        },
      ],
    ];
    const statuses: Record<string, number> = {};
    for (const [name, send] of outcomes) {
      statuses[name] = await send();
      await nothingHeld();
    }
    expect(statuses).to.deep.equal({
      answered: 200,
      'streamed to its end': 200,
      'invalid JSON': 400,
      'a model name too long': 400,
      'over the body limit': 413,
      'an unreachable provider': 502,
      'a provider error': 500,
    });
  });

  it('an upload received into the spool file takes nothing from the bound', async () => {
    stalledStream('application/octet-stream');
    const form = new FormData();
    form.append('file', new Blob([new Uint8Array(randomBytes(900 * 1024))]), 'speech.mp3'); // the file first: spooled
    form.append('model', 'whisper-1');
    const encoded = new Request('http://x', { method: 'POST', body: form });
    const abort = new AbortController();
    const res = await request(`${gw.url}/v1/audio/transcriptions`, {
      method: 'POST',
      headers: jsonHeaders(gw, { 'content-type': encoded.headers.get('content-type')! }),
      body: Buffer.from(await encoded.arrayBuffer()),
      signal: abort.signal,
    });
    expect(res.statusCode).to.equal(200);
    await res.body[Symbol.asyncIterator]().next();
    expect(gw.gateway.proxy.inflight, 'the upload is in flight').to.equal(1);
    expect(held()).to.equal(0);
    abort.abort();
    await waitFor(() => gw.gateway.proxy.inflight === 0, 5000, 'the upload over');
  });
});

async function statusOf(res: Awaited<ReturnType<typeof request>>): Promise<number> {
  await res.body.dump();
  return res.statusCode;
}
