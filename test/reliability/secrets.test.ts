import { expect } from 'chai';
import { sleep } from '../helpers/wait';
import { request } from 'undici';
import { ANTHROPIC_KEY, OPENAI_KEY, TEST_ADMIN_TOKEN, type TestGateway } from '../helpers/gateway';
import { chatStreamEvents, FaultyUpstream, SSE_TYPE } from '../helpers/faulty-upstream';
import { recordFigures } from '../helpers/figures';
import {
  admin,
  call,
  chatBody,
  expectNoSecrets,
  jsonHeaders,
  OPENROUTER_KEY,
  PLANTED_SECRETS,
  recordsFor,
  settledCount,
  startGateway,
  streamBody,
  WRONG_GATEWAY_KEY,
} from '../helpers/reliability';

/**
 * (What a client writes into non-secret fields, a model name, a tag, a path, is data: it is logged or stored or
 * echoed back to that client like any model name. The secrets here travel where secrets belong.)
 *
 * Secrets: recognisable provider keys, gateway keys (right and wrong) and the admin token are planted in every
 * place a client can put them, through every path a request can take (success, refusals, provider errors that
 * echo the key back, resets, time-outs, client aborts, admin refusals). No log line, stored record, admin
 * answer, file at rest or error the gateway wrote itself may contain one.
 */
describe('reliability: secrets never leak', function () {
  this.timeout(30_000);
  const upstream = new FaultyUpstream();
  let gw: TestGateway;
  const gatewayErrors: string[] = [];

  before(async () => {
    await upstream.start();
    // A provider that echoes the key it got, like OpenAI's "Incorrect API key provided: sk-...".
    upstream.respondWith((req, body) => {
      const auth = String(req.headers.authorization ?? req.headers['x-api-key'] ?? '');
      switch (body?.model) {
        case 'gpt-echo-401':
          return {
            status: 401,
            headers: { 'content-type': 'application/json', 'x-echo': auth },
            body: Buffer.from(
              `{"error":{"message":"Incorrect API key provided: ${auth}","type":"invalid_request_error","param":null,"code":"invalid_api_key"}}`,
            ),
          };
        case 'gpt-echo-stream':
          return {
            status: 200,
            headers: SSE_TYPE,
            body: [Buffer.from(`data: {"choices":[{"delta":{"content":"${auth}"}}]}\n\n`), ...chatStreamEvents()],
          };
        // The same, paced (16 events, 40 ms apart): a client can leave while it is still streaming.
        case 'gpt-echo-slow':
          return {
            status: 200,
            headers: SSE_TYPE,
            body: [Buffer.from(`data: {"choices":[{"delta":{"content":"${auth}"}}]}\n\n`), ...chatStreamEvents()],
            delayMs: 40,
          };
        case 'gpt-reset':
          return { fault: 'reset-mid-stream', events: chatStreamEvents(), sendEvents: 2 };
        case 'gpt-stall':
          return { fault: 'stall-before-headers' };
        default:
          return undefined;
      }
    });
    gw = await startGateway(upstream.url, 'upstream: { first_byte_ms: 300 }');
  });
  after(async () => {
    await gw?.stop();
    await upstream.stop();
  });

  it('through every request path, the planted secrets reach only the provider', async () => {
    const keyHeaders = (extra: Record<string, string> = {}) =>
      jsonHeaders(gw, {
        'x-api-key': ANTHROPIC_KEY,
        cookie: `session=${OPENAI_KEY}`,
        'proxy-authorization': `Basic ${OPENROUTER_KEY}`,
        ...extra,
      });
    const keep = (r: { status: number; text: string; headers: Record<string, unknown> }) => {
      // Errors the gateway wrote itself (not the provider's answers, which are the client's own business).
      if (r.status >= 400 && !String(r.headers['x-echo'] ?? '').length && !r.text.includes('Incorrect API key'))
        gatewayErrors.push(r.text);
    };
    const requests: [string, Parameters<typeof call>[2]][] = [
      ['/v1/chat/completions', { body: chatBody(), headers: keyHeaders() }],
      ['/v1/chat/completions', { body: streamBody(), headers: keyHeaders() }],
      ['/v1/chat/completions', { body: chatBody({ model: 'gpt-echo-401' }), headers: keyHeaders() }],
      ['/v1/chat/completions', { body: chatBody({ model: 'gpt-echo-stream', stream: true }), headers: keyHeaders() }],
      ['/v1/chat/completions', { body: chatBody({ model: 'gpt-reset', stream: true }), headers: keyHeaders() }],
      ['/v1/chat/completions', { body: chatBody({ model: 'gpt-stall' }), headers: keyHeaders() }],
      ['/v1/chat/completions', { body: chatBody(), headers: keyHeaders({ 'x-gateway-key': WRONG_GATEWAY_KEY }) }],
      [
        '/v1/chat/completions',
        { body: chatBody(), headers: keyHeaders({ 'x-gateway-key': `${gw.key}, ${WRONG_GATEWAY_KEY}` }) },
      ],
      ['/v1/chat/completions', { body: chatBody(), headers: keyHeaders({ authorization: '', 'x-api-key': '' }) }],
      [
        '/v1/messages',
        {
          body: JSON.stringify({ model: 'claude-haiku-4-5', max_tokens: 5, messages: [] }),
          headers: keyHeaders({ authorization: '' }),
        },
      ],
      [
        '/v1/models',
        {
          method: 'GET',
          headers: keyHeaders({ 'x-gateway-provider': 'openrouter', authorization: `Bearer ${OPENROUTER_KEY}` }),
        },
      ],
      [`/v1/chat/completions?api_key=${OPENAI_KEY}&key=${ANTHROPIC_KEY}`, { body: chatBody(), headers: keyHeaders() }],
    ];
    for (const [path, init] of requests) keep(await call(gw, path, init));
    // A client that leaves mid-stream: after the first event, while the provider is still streaming.
    const ac = new AbortController();
    const midStream = await request(`${gw.url}/v1/chat/completions`, {
      method: 'POST',
      headers: keyHeaders(),
      body: chatBody({ model: 'gpt-echo-slow', stream: true }),
      signal: ac.signal,
    });
    expect(midStream.statusCode).to.equal(200);
    const abortedId = midStream.headers['x-gateway-request-id'] as string;
    const events = midStream.body[Symbol.asyncIterator]();
    const first = await events.next();
    expect(String(first.value), 'the first event arrived').to.include('data:');
    ac.abort();
    await events.return?.().catch(() => undefined);
    const abortedUpstream = upstream.received.find((r) => r.body.toString().includes('gpt-echo-slow'))!;
    await abortedUpstream.done;
    expect(abortedUpstream.aborted, 'the provider saw the stream aborted before its end').to.equal(true);
    const aborted = (await recordsFor(gw, [abortedId])).get(abortedId);
    expect(aborted).to.include({ status: 200, streamed: true, provenance: 'partial', error_code: 'request_aborted' });
    // The admin API refusing wrong tokens, and the proxy port refusing the admin token.
    for (const token of [WRONG_GATEWAY_KEY, OPENAI_KEY, `${TEST_ADMIN_TOKEN}x`])
      gatewayErrors.push((await admin(gw, '/api/usage', token)).text);
    keep(await call(gw, '/api/usage', { method: 'GET', headers: { authorization: `Bearer ${TEST_ADMIN_TOKEN}` } }));

    await sleep(200);
    const stored = await settledCount(gw);
    expect(stored).to.be.at.least(requests.length);
    // Each planted secret did reach the provider, where it belongs.
    const sentUpstream = upstream.received.map((r) => JSON.stringify(r.headers)).join('\n');
    for (const k of [OPENAI_KEY, ANTHROPIC_KEY]) expect(sentUpstream).to.include(k);
    expect(sentUpstream, 'the gateway key is never forwarded').to.not.include(gw.key);
    const scanned = await expectNoSecrets(gw, gatewayErrors);
    console.log(
      `      scanned ${scanned.logLines} log lines, ${scanned.records} records, ${scanned.adminAnswers} admin answers, ${scanned.files} files, ${gatewayErrors.length} gateway errors for ${PLANTED_SECRETS.length} planted secrets`,
    );
    recordFigures('secrets', 'request-paths', {
      request_paths: requests.length + 1,
      ...scanned,
      gateway_errors: gatewayErrors.length,
      planted_secrets: PLANTED_SECRETS.length,
    });
  });
});
