import { expect } from 'chai';
import { OPENAI_KEY, useGateway, type TestGateway } from '../helpers/gateway';
import { rawRequest } from '../helpers/raw-http';
import { TestUpstream } from '../helpers/upstream';

/**
 * The request-header limits docs/reliability.md states: 16 KiB of headers in all (Node's own 431), and at most
 * 1,000 headers. Past the count Node would keep 2,000 and drop the rest unseen; the proxy refuses instead.
 */
describe('request-header limits', () => {
  const upstream = new TestUpstream();
  let gw: TestGateway;
  useGateway(upstream, (g) => (gw = g));

  const chatWith = (extraHeaders: string) =>
    rawRequest(
      gw.url,
      `POST /v1/chat/completions HTTP/1.1\r\nHost: gateway\r\nContent-Type: application/json\r\n` +
        `X-Gateway-Key: ${gw.key}\r\nAuthorization: Bearer ${OPENAI_KEY}${extraHeaders}`,
      JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] }),
    );
  const headers = (n: number) => Array.from({ length: n }, (_, i) => `\r\nX-Filler-${i}: v`).join('');

  it('1,000 headers in all are served', async () => {
    const res = await chatWith(headers(1000 - 6)); // with Host, Content-Type, the two keys, Connection and Content-Length
    expect(res.status, res.body).to.equal(200);
  });

  it('one more is refused with 431 headers_too_many in the gateway error shape, before anything reaches the provider', async () => {
    const res = await chatWith(headers(1000 - 5));
    expect(res.status).to.equal(431);
    expect(JSON.parse(res.body).error).to.include({ code: 'headers_too_many', type: 'invalid_request_error' });
    expect(upstream.received).to.have.length(0);
  });

  it('2,500 headers (Node would keep 2,000 and drop the rest) are refused, not cut', async () => {
    expect((await chatWith(headers(2500))).status).to.equal(431);
    expect(upstream.received).to.have.length(0);
  });

  it('more than 16 KiB of headers is refused with 431 by Node itself', async () => {
    const res = await chatWith(`\r\nX-Big: ${'a'.repeat(17 * 1024)}`);
    expect(res.status).to.equal(431);
    expect(upstream.received).to.have.length(0);
  });
});
