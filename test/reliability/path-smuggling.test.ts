import { expect } from 'chai';
import { ERROR_CODES } from '../../core/errors';
import { ANTHROPIC_KEY, OPENAI_KEY, type TestGateway } from '../helpers/gateway';
import { FaultyUpstream } from '../helpers/faulty-upstream';
import {
  chatBody,
  expectNoSecrets,
  expectWellFormed,
  rawExchange,
  startGateway,
  type ParsedResponse,
} from '../helpers/reliability';

/** Every upstream request must be one of these: a configured provider base path plus an allow-listed endpoint path. */
const ALLOWED =
  /^\/(openai\/v1|anthropic\/v1|perplexity|openrouter\/api\/v1|mistral\/v1)\/(chat\/completions|messages|responses|embeddings|audio\/speech|audio\/transcriptions|audio\/translations|images\/generations|images\/edits|images\/variations|models)$/;

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

  const auth = () =>
    `X-Gateway-Key: ${gw.key}\r\nAuthorization: Bearer ${OPENAI_KEY}\r\nX-Api-Key: ${ANTHROPIC_KEY}\r\n`;
  /** A request with a correct body and length; `target` and `extra` header lines as given. */
  const req = (target: string, extra = '', body = chatBody(), method = 'POST', host = 'gateway.test') =>
    Buffer.from(
      `${method} ${target} HTTP/1.1\r\nHost: ${host}\r\nContent-Type: application/json\r\n${auth()}${extra}Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
      'latin1',
    );

  /** The one well-formed answer to `bytes`. */
  async function answer(label: string, bytes: Buffer): Promise<ParsedResponse> {
    const ex = await rawExchange(gw.url, bytes, 5000);
    return expectWellFormed(ex, label, ERROR_CODES);
  }
  const send = async (label: string, bytes: Buffer): Promise<number> => (await answer(label, bytes)).status;
  /** The gateway's error code in an answer, or undefined for a success or an answer of Node's parser (no body). */
  const codeOf = (r: ParsedResponse): string | undefined =>
    r.status >= 400 && r.body.length ? JSON.parse(r.body.toString()).error.code : undefined;
  const hasHeader = (r: ParsedResponse, name: string) => r.headers.some(([k]) => k.toLowerCase() === name);

  afterEach(() => {
    expect(
      evil.received.map((r) => r.url),
      'the evil server was reached',
    ).to.deep.equal([]);
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
    '/v1/chat%2Fcompletions',
    '/v1%2Fchat%2Fcompletions',
    '/v1/chat/completions%2F..%2F..%2Fadmin',
    '/v1/chat/completions/..',
    '/v1/chat/completions/.',
    '/v1/./chat/completions',
    '/v1/chat/./completions',
    '/v1/x/../chat/completions',
    '/v1/chat/completions/../../../etc/passwd',
    '/v1/%2e%2e/v1/chat/completions',
    '//v1/chat/completions',
    '/v1//chat/completions',
    '/v1/chat//completions',
    '///v1/chat/completions',
    '/v1/chat/completions/',
    '/v1/chat/completions;x=1',
    '/v1/chat/completions%00',
    '/v1/chat/completion%C0%AF',
    '/v1\\chat\\completions',
    '/V1/chat/completions',
    '/v1/CHAT/completions',
    '/%76%31/chat/completions',
    '//127.0.0.1:9/v1/chat/completions',
    '/127.0.0.1:9/v1/chat/completions',
    '/v1/chat/completions%23/../x',
    '/v1/models/../../api/usage',
  ];
  for (const target of traversals) {
    it(`refuses ${target} with 404 (never proxied)`, async () => {
      expect(await send(target, req(target))).to.equal(404);
      expect(upstream.received).to.have.length(0);
    });
  }

  it('a query string cannot move the path: it stays a query, on an allow-listed path', async () => {
    for (const q of [
      '?x=/../../admin',
      '?@' + evilHost,
      '?%2F..%2F..%2Fadmin',
      '?a=1#/../../x',
      '?' + encodeURIComponent(`http://${evilHost}/`),
      '??//../x',
      '?%0d%0aHost:%20evil',
    ]) {
      expect(await send(q, req(`/v1/chat/completions${q}`))).to.equal(200);
    }
    expect(upstream.received).to.have.length(7);
  });

  it('absolute-form request targets never choose the upstream', async () => {
    // The host in the target is ignored: its path is routed like any other, to the configured provider.
    const cases: [string, string, number][] = [
      ['absolute to evil', `http://${evilHost}/v1/chat/completions`, 200],
      ['absolute https to evil', `https://${evilHost}/v1/chat/completions`, 200],
      ['absolute with userinfo', `http://user:pass@${evilHost}/v1/chat/completions`, 200],
      ['absolute to evil, other path', `http://${evilHost}/admin`, 404],
      ['absolute to the gateway itself', `${gw.url}/v1/chat/completions`, 200],
    ];
    for (const [label, target, status] of cases) expect(await send(label, req(target)), label).to.equal(status);
    expect(upstream.received.map((r) => r.url)).to.deep.equal(Array(4).fill('/openai/v1/chat/completions'));
  });

  it('a Host header (or forwarding headers) naming another server changes nothing', async () => {
    expect(await send('Host: evil', req('/v1/chat/completions', '', chatBody(), 'POST', evilHost))).to.equal(200);
    expect(
      await send(
        'X-Forwarded-Host',
        req(
          '/v1/chat/completions',
          `X-Forwarded-Host: ${evilHost}\r\nForwarded: host=${evilHost};proto=http\r\nX-Original-URL: /admin\r\nX-Rewrite-URL: /admin\r\n`,
        ),
      ),
    ).to.equal(200);
    expect(upstream.received).to.have.length(2);
  });

  it('provider and model names cannot carry a URL or a path', async () => {
    // A provider name that is no configured provider is refused; a model is text in the body: one whose name starts
    // like an OpenAI model goes to OpenAI unchanged, one that names no provider's models is refused.
    const cases: [string, string, string, number, string | undefined][] = [
      ['provider header is a URL', `X-Gateway-Provider: http://${evilHost}\r\n`, chatBody(), 400, 'provider_unknown'],
      ['provider header with a path', 'X-Gateway-Provider: openai/../../evil\r\n', chatBody(), 400, 'provider_unknown'],
      ['model is a URL', '', chatBody({ model: `http://${evilHost}/v1` }), 400, 'provider_not_determined'],
      ['model with dot segments', '', chatBody({ model: 'gpt-4o/../../../../admin' }), 200, undefined],
      ['model with an encoded slash', '', chatBody({ model: 'gpt-4o%2F..%2F..%2Fx' }), 200, undefined],
      ['model with CRLF', '', chatBody({ model: 'gpt-4o\r\nHost: evil' }), 200, undefined],
    ];
    for (const [label, extra, body, status, code] of cases) {
      const r = await answer(label, req('/v1/chat/completions', extra, body));
      expect([r.status, codeOf(r)], label).to.deep.equal([status, code]);
    }
    // The model travels in the body only, as the client wrote it; the upstream path never changes.
    expect(upstream.received.map((r) => r.url)).to.deep.equal(Array(3).fill('/openai/v1/chat/completions'));
    expect(upstream.received.map((r) => JSON.parse(r.body.toString()).model)).to.deep.equal([
      'gpt-4o/../../../../admin',
      'gpt-4o%2F..%2F..%2Fx',
      'gpt-4o\r\nHost: evil',
    ]);
  });

  it('CR and LF inside header values are refused by the parser or stay inside one header', async () => {
    // A lone CR, a bare LF, a folded line, a NUL: Node's parser refuses the request (a bare 400 before the gateway
    // sees it, so no request id) and nothing goes upstream.
    const refused = [
      `X-Custom: a\rX-Injected: b\r\n`,
      `X-Custom: a\nX-Injected: b\r\n`,
      `X-Custom: a\r\n Host: ${evilHost}\r\n`,
      `X-Custom: a\u0000b\r\n`,
      `X-Gateway-Metadata-Agent: a\rb\r\n`,
    ];
    for (const v of refused) {
      const r = await answer(JSON.stringify(v), req('/v1/chat/completions', v));
      expect([r.status, hasHeader(r, 'x-gateway-request-id')], JSON.stringify(v)).to.deep.equal([400, false]);
    }
    expect(upstream.received, 'a refused request went upstream').to.have.length(0);

    // Well-formed lines: a second Authorization and a second Host after the request's own (the first of each counts),
    // and a CR/LF written as %0d%0a, which is plain text. Both are proxied; no line of theirs becomes a header.
    const twice = await answer(
      'second Authorization and Host lines',
      req('/v1/chat/completions', `Authorization: Bearer ${OPENAI_KEY}\r\nHost: ${evilHost}\r\n`),
    );
    const encoded = await answer('encoded CR/LF', req('/v1/chat/completions', 'X-Custom: %0d%0aX-Injected:%20b\r\n'));
    for (const r of [twice, encoded]) expect([r.status, hasHeader(r, 'x-injected')]).to.deep.equal([200, false]);
    expect(upstream.received).to.have.length(2);
    expect(upstream.received[0].headers.authorization).to.equal(`Bearer ${OPENAI_KEY}`);
    expect(upstream.received[1].headers['x-custom']).to.equal('%0d%0aX-Injected:%20b');
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
      'GET /v1/models\r\n\r\n',
      'PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n',
      `GET /v1/models?${'a'.repeat(70_000)} HTTP/1.1\r\nHost: x\r\n\r\n`,
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
