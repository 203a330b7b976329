import { expect } from 'chai';
import { call } from '../framework/helpers';
import { fixtureBytes } from '../helpers/fixtures';
import { ANTHROPIC_KEY, type TestGateway, useGateway } from '../helpers/gateway';
import { TestUpstream } from '../helpers/upstream';

/**
 * GET /v1/models with X-Gateway-Provider: the provider's live list (spec, GET /v1/models, mode 2). Both the gateway
 * key and the provider's key are required, and the messages-style version headers are forwarded (Authentication 3).
 */
describe('GET /v1/models passthrough: what the provider receives', () => {
  const upstream = new TestUpstream();
  let gw: TestGateway;
  useGateway(upstream, (g) => (gw = g));

  const refusals = [
    {
      provider: 'openai',
      message:
        'OpenAI needs your provider key in the Authorization: Bearer <key> header. It is forwarded as is and never stored.',
    },
    {
      provider: 'anthropic',
      message:
        'Anthropic needs your provider key in the x-api-key: <key> or Authorization: Bearer <key> header. It is forwarded as is and never stored.',
    },
  ];
  for (const { provider, message } of refusals) {
    it(`without the provider key: 401 provider_key_missing, nothing sent to ${provider}`, async () => {
      const r = await call(gw, '/v1/models', undefined, {
        'x-gateway-provider': provider,
        authorization: undefined,
        'content-type': undefined,
      });
      expect(r.status, r.text).to.equal(401);
      expect(r.json).to.deep.equal({
        error: { message, type: 'authentication_error', param: null, code: 'provider_key_missing' },
      });
      expect(upstream.received).to.have.length(0);
    });
  }

  it('to the messages-style provider: its key, the version and beta headers and the query string arrive as sent', async () => {
    const r = await call(gw, '/v1/models?limit=20', undefined, {
      'x-gateway-provider': 'anthropic',
      authorization: undefined,
      'content-type': undefined,
      'x-api-key': ANTHROPIC_KEY,
      'anthropic-version': '2023-06-01',
      'anthropic-beta': 'token-counting-2024-11-01',
      'alt-version': '2023-06-01',
    });
    expect(r.status, r.text).to.equal(200);
    // The test upstream answers every non-aggregator models call with this recording: relayed as it came.
    expect(r.text).to.equal(fixtureBytes('openai/models_list.json').toString('utf8'));
    const seen = upstream.last();
    expect(seen.method).to.equal('GET');
    expect(seen.url).to.equal('/anthropic/v1/models?limit=20');
    expect(seen.headers['x-api-key']).to.equal(ANTHROPIC_KEY);
    expect(seen.headers['anthropic-version']).to.equal('2023-06-01');
    expect(seen.headers['anthropic-beta']).to.equal('token-counting-2024-11-01');
    expect(seen.headers['alt-version']).to.equal('2023-06-01');
    expect(Object.keys(seen.headers).filter((h) => h.startsWith('x-gateway-'))).to.deep.equal([]);
  });
});
