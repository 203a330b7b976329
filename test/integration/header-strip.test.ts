import { join } from 'node:path';
import { expect } from 'chai';
import { call, chat, FIXTURES_DIR } from '../framework/helpers';
import { GATEWAY_HEADERS_SET, OTHER_HEADER } from '../framework/fixtures/gateway-header-plugin';
import { ANTHROPIC_KEY, startTestGateway, type TestGateway } from '../helpers/gateway';
import { TestUpstream } from '../helpers/upstream';

const MESSAGES = { model: 'claude-sonnet-4-5', max_tokens: 10, messages: [{ role: 'user', content: 'hi' }] };

/** Names of the X-Gateway-* headers the provider received (there must be none). */
const gatewayHeadersSeen = (headers: Record<string, unknown>) =>
  Object.keys(headers).filter((h) => h.startsWith('x-gateway-'));

/**
 * The provider never sees the gateway's own headers (spec, Authentication 2), whoever set them, and header-strip's
 * `remove:` list keeps further headers from it.
 */
describe('headers the provider never sees', () => {
  const upstream = new TestUpstream();
  let gw: TestGateway | undefined;

  before(() => upstream.start());
  after(() => upstream.stop());
  afterEach(async () => {
    await gw?.stop();
    gw = undefined;
    upstream.reset();
  });

  it('X-Gateway-* headers a plugin sets after header-strip ran are removed by the core', async () => {
    const writer = join(FIXTURES_DIR, 'gateway-header-plugin');
    gw = await startTestGateway(
      upstream.url,
      `plugins:\n  - use: auth\n  - use: header-strip\n  - use: "${writer}"\n  - use: usage-recorder\n`,
    );
    for (const [path, body, headers] of [
      ['/v1/chat/completions', chat('gpt-4o-mini'), {}],
      ['/v1/messages', MESSAGES, { authorization: undefined, 'x-api-key': ANTHROPIC_KEY }],
    ] as const) {
      const r = await call(gw, path, body, { 'x-gateway-metadata-agent': 'client-agent', ...headers });
      expect(r.status, `${path}: ${r.text}`).to.equal(200);
      const sent = upstream.last().headers;
      expect(sent[OTHER_HEADER[0]], `${path}: the plugin ran and its other header arrived`).to.equal(OTHER_HEADER[1]);
      expect(gatewayHeadersSeen(sent), path).to.deep.equal([]);
      expect(JSON.stringify(sent), path).to.not.include(GATEWAY_HEADERS_SET['x-gateway-key']);
    }
  });

  it("header-strip's remove option keeps the configured headers from the provider, in any case", async () => {
    gw = await startTestGateway(
      upstream.url,
      'plugins:\n  - use: auth\n  - use: header-strip\n    options: { remove: [X-Forwarded-For, x-internal-trace] }\n',
    );
    const r = await call(gw, '/v1/chat/completions', chat('gpt-4o-mini'), {
      'X-Forwarded-For': '10.1.2.3',
      'X-Internal-Trace': 'trace-7f3a',
      'x-request-note': 'kept',
    });
    expect(r.status, r.text).to.equal(200);
    const sent = upstream.last().headers;
    expect(sent['x-forwarded-for']).to.equal(undefined);
    expect(sent['x-internal-trace']).to.equal(undefined);
    expect(sent['x-request-note'], 'a header not listed is forwarded').to.equal('kept');
    expect(JSON.stringify(sent)).to.not.include('10.1.2.3').and.not.include('trace-7f3a');
  });
});
