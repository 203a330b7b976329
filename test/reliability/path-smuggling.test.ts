import { expect } from 'chai';
import { ERROR_CODES } from '../../core/errors';
import { ANTHROPIC_KEY, OPENAI_KEY, type TestGateway } from '../helpers/gateway';
import { FaultyUpstream } from '../helpers/faulty-upstream';
import { chatBody, expectNoSecrets, expectWellFormed, rawExchange, startGateway } from '../helpers/reliability';

/** Every upstream request must be one of these: a configured provider base path plus an allow-listed endpoint path. */
const ALLOWED = /^\/(openai\/v1|anthropic\/v1|perplexity|openrouter\/api\/v1|mistral\/v1)\/(chat\/completions|messages|responses|embeddings|audio\/speech|audio\/transcriptions|audio\/translations|images\/generations|images\/edits|images\/variations|models)$/;

/**
 * Path traversal and request smuggling. An "evil" server listens on loopback next to the real (test) provider;
 * whatever the client sends (encoded slashes, dot segments, double slashes, absolute-form targets, a Host header
 * naming the evil server, CRLF tricks, conflicting framing), nothing may reach the evil server, and the provider
 * may only see allow-listed paths under its configured base URL.
 */
describe('reliability: path traversal and request smuggling', function () {
  this.timeout(30_000);
  const upstream = new FaultyUpstream();
  const evil = new FaultyUpstream();
  let gw: TestGateway;
  let evilHost: string;

  before(async () => {
    await upstream.start();
    await evil.start();
    evilHost = new URL(evil.url).host;
    gw = await startGateway(upstream.url);
  });
  after(async () => {
    await gw?.stop();
    await upstream.stop();
    await evil.stop();
  });

  const auth = () => `X-Gateway-Key: ${gw.key}\r\nAuthorization: Bearer ${OPENAI_KEY}\r\nX-Api-Key: ${ANTHROPIC_KEY}\r\n`;
  /** A request with a correct body and length; `target` and `extra` header lines as given. */
  const req = (target: string, extra = '', body = chatBody(), method = 'POST', host = 'gateway.test') =>
    Buffer.from(`${method} ${target} HTTP/1.1\r\nHost: ${host}\r\nContent-Type: application/json\r\n${auth()}${extra}Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`, 'latin1');

  async function send(label: string, bytes: Buffer): Promise<number> {
    const ex = await rawExchange(gw.url, bytes, 5000);
    return expectWellFormed(ex, label, ERROR_CODES).status;
  }

  afterEach(() => {
    expect(evil.received.map((r) => r.url), 'the evil server was reached').to.deep.equal([]);
    for (const r of upstream.received) {
      expect(r.url.split('?')[0], 'upstream path outside the allow-list').to.match(ALLOWED);
      expect(r.headers.host, 'Host sent upstream').to.equal(new URL(upstream.url).host);
      for (const [name, value] of Object.entries(r.headers)) {
        expect(name.startsWith('x-gateway-'), `forwarded ${name}`).to.equal(false);
        expect(String(value), `header ${name} carries a line break`).to.not.match(/[\r\n]/);
      }
    }
    upstream.reset();
  });

  const traversals = [
    '/v1/chat%2Fcompletions', '/v1%2Fchat%2Fcompletions', '/v1/chat/completions%2F..%2F..%2Fadmin', '/v1/chat/completions/..', '/v1/chat/completions/.',
    '/v1/./chat/completions', '/v1/chat/./completions', '/v1/x/../chat/completions', '/v1/chat/completions/../../../etc/passwd', '/v1/%2e%2e/v1/chat/completions',
    '//v1/chat/completions', '/v1//chat/completions', '/v1/chat//completions', '///v1/chat/completions', '/v1/chat/completions/', '/v1/chat/completions;x=1',
    '/v1/chat/completions%00', '/v1/chat/completion%C0%AF', '/v1\\chat\\completions', '/V1/chat/completions', '/v1/CHAT/completions', '/%76%31/chat/completions',
    '//127.0.0.1:9/v1/chat/completions', '/127.0.0.1:9/v1/chat/completions', '/v1/chat/completions%23/../x', '/v1/models/../../api/usage',
  ];
  for (const target of traversals) {
    it(`refuses ${target} with 404 (never proxied)`, async () => {
      expect(await send(target, req(target))).to.equal(404);
      expect(upstream.received).to.have.length(0);
    });
  }

  it('a query string cannot move the path: it stays a query, on an allow-listed path', async () => {
    for (const q of ['?x=/../../admin', '?@' + evilHost, '?%2F..%2F..%2Fadmin', '?a=1#/../../x', '?' + encodeURIComponent(`http://${evilHost}/`), '??//../x', '?%0d%0aHost:%20evil']) {
      expect(await send(q, req(`/v1/chat/completions${q}`))).to.equal(200);
    }
    expect(upstream.received).to.have.length(7);
  });

  it('absolute-form request targets never choose the upstream', async () => {
    const statuses = [
      await send('absolute to evil', req(`http://${evilHost}/v1/chat/completions`)),
      await send('absolute https to evil', req(`https://${evilHost}/v1/chat/completions`)),
      await send('absolute with userinfo', req(`http://user:pass@${evilHost}/v1/chat/completions`)),
      await send('absolute to evil, other path', req(`http://${evilHost}/admin`)),
      await send('absolute to the gateway itself', req(`${gw.url}/v1/chat/completions`)),
    ];
    // Either routed to the configured provider like a normal request, or refused: never sent to the named host.
    console.log(`      absolute-form answers: ${statuses.join(', ')}`);
    for (const s of statuses) expect([200, 400, 404]).to.include(s);
  });

  it('a Host header (or forwarding headers) naming another server changes nothing', async () => {
    expect(await send('Host: evil', req('/v1/chat/completions', '', chatBody(), 'POST', evilHost))).to.equal(200);
    expect(await send('X-Forwarded-Host', req('/v1/chat/completions', `X-Forwarded-Host: ${evilHost}\r\nForwarded: host=${evilHost};proto=http\r\nX-Original-URL: /admin\r\nX-Rewrite-URL: /admin\r\n`))).to.equal(200);
    expect(upstream.received).to.have.length(2);
  });

  it('provider and model names cannot carry a URL or a path', async () => {
    const cases: [string, string, string][] = [
      ['provider header is a URL', `X-Gateway-Provider: http://${evilHost}\r\n`, chatBody()],
      ['provider header with a path', 'X-Gateway-Provider: openai/../../evil\r\n', chatBody()],
      ['model is a URL', '', chatBody({ model: `http://${evilHost}/v1` })],
      ['model with dot segments', '', chatBody({ model: 'gpt-4o/../../../../admin' })],
      ['model with an encoded slash', '', chatBody({ model: 'gpt-4o%2F..%2F..%2Fx' })],
      ['model with CRLF', '', chatBody({ model: 'gpt-4o\r\nHost: evil' })],
    ];
    for (const [label, extra, body] of cases) {
      const status = await send(label, req('/v1/chat/completions', extra, body));
      expect([200, 400], label).to.include(status);
    }
    // The model travels in the body only; the upstream path never changes.
    for (const r of upstream.received) expect(r.url).to.equal('/openai/v1/chat/completions');
  });

  it('CR and LF inside header values are refused by the parser or stay inside one header', async () => {
    const variants = [
      `X-Custom: a\rX-Injected: b\r\n`, `X-Custom: a\nX-Injected: b\r\n`, `X-Custom: a\r\n Host: ${evilHost}\r\n`, `X-Custom: a\u0000b\r\n`,
      `X-Gateway-Metadata-Agent: a\rb\r\n`, `Authorization: Bearer ${OPENAI_KEY}\r\nHost: ${evilHost}\r\n`, `X-Custom: %0d%0aX-Injected:%20b\r\n`,
    ];
    const statuses: number[] = [];
    for (const v of variants) statuses.push(await send(JSON.stringify(v), req('/v1/chat/completions', v)));
    console.log(`      CR/LF variants answered: ${statuses.join(', ')}`);
    for (const r of upstream.received) expect(Object.keys(r.headers)).to.not.include('x-injected');
  });

  it('conflicting or odd framing (CL.TE, TE.CL, duplicate lengths) never smuggles a second request', async () => {
    const body = chatBody();
    const smuggled = `POST /v1/chat/completions HTTP/1.1\r\nHost: ${evilHost}\r\n${auth()}Content-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}`;
    const heads = [
      // CL.TE: both lengths, a smuggled request hidden in the "body"
      `POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\n${auth()}Content-Type: application/json\r\nContent-Length: ${body.length}\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n${smuggled}`,
      // TE.CL
      `POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\n${auth()}Content-Type: application/json\r\nTransfer-Encoding: chunked\r\nContent-Length: 4\r\n\r\n${body.length.toString(16)}\r\n${body}\r\n0\r\n\r\n`,
      // two different lengths
      `POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\n${auth()}Content-Type: application/json\r\nContent-Length: ${body.length}\r\nContent-Length: 5\r\n\r\n${body}`,
      // obfuscated transfer-encodings
      `POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\n${auth()}Content-Type: application/json\r\nTransfer-Encoding: xchunked\r\n\r\n${body}`,
      `POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\n${auth()}Content-Type: application/json\r\nTransfer-Encoding: chunked, identity\r\n\r\n0\r\n\r\n`,
      `POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\n${auth()}Content-Type: application/json\r\nTransfer-Encoding : chunked\r\n\r\n0\r\n\r\n`,
      `POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\n${auth()}Content-Type: application/json\r\nContent-Length: +${body.length}\r\n\r\n${body}`,
      // HTTP/0.9, HTTP/2 preface, a huge request line
      'GET /v1/models\r\n\r\n', 'PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n', `GET /v1/models?${'a'.repeat(70_000)} HTTP/1.1\r\nHost: x\r\n\r\n`,
    ];
    for (const head of heads) {
      const ex = await rawExchange(gw.url, Buffer.from(head, 'latin1'), 5000);
      // A refusal closes the connection, so nothing after the first request is ever parsed.
      expect(ex.responses.filter((r) => r.status >= 200).length, JSON.stringify(head.slice(0, 120))).to.be.at.most(1);
      if (ex.responses.length) expectWellFormed(ex, JSON.stringify(head.slice(0, 120)), ERROR_CODES);
    }
    expect(upstream.received.length).to.be.at.most(2); // the CL.TE and TE.CL bodies may each be read once, as one request
  });

  describe('afterwards', () => {
    it('leaked no planted secret', async () => {
      await expectNoSecrets(gw);
    });
  });
});
