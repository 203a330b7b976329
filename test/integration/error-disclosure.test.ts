import { expect } from 'chai';
import OpenAI from 'openai';
import { refusedPortUrl } from '../helpers/faulty-upstream';
import { startTestGateway, type TestGateway, openaiClient } from '../helpers/gateway';
import { TestUpstream } from '../helpers/upstream';

/**
 * The gateway's own errors name a failing provider by its slug, never by its address: a self-hosted model's
 * base URL is often an internal address, and a client has no business learning it. The SDK is the client.
 */
describe('errors never reveal upstream addresses', () => {
  const upstream = new TestUpstream();
  let gw: TestGateway;
  let dead: string;

  before(async () => {
    await upstream.start();
    dead = await refusedPortUrl();
    gw = await startTestGateway(
      upstream.url,
      `
upstream: { first_byte_ms: 300 }
providers:
  inhouse: { type: openai-compatible, base_url: "${dead}/v1", prefixes: [inhouse-] }
`,
    );
  });
  after(async () => {
    await gw?.stop();
    await upstream.stop();
  });

  const client = () => openaiClient(gw);
  async function failure(model: string): Promise<{ status: number; code: string; message: string }> {
    const err = await client()
      .chat.completions.create({ model, messages: [{ role: 'user', content: 'hi' }] })
      .then(
        () => null,
        (e: unknown) => e,
      );
    expect(err).to.be.instanceOf(OpenAI.APIError);
    const e = err as InstanceType<typeof OpenAI.APIError>;
    const body = e.error as { code: string; message: string };
    return { status: e.status!, code: body.code, message: body.message };
  }
  const addressesOf = (url: string) => {
    const { host, port } = new URL(url);
    return [url, host, `:${port}`, '127.0.0.1'];
  };

  it('an unreachable provider: 502 naming its slug, not its host or port', async () => {
    const f = await failure('inhouse-llama');
    expect(f).to.include({ status: 502, code: 'upstream_unreachable' });
    expect(f.message).to.equal('The upstream provider inhouse could not be reached');
    for (const leak of addressesOf(dead)) expect(f.message).to.not.include(leak);
  });

  it('a provider that does not answer in time: 504 naming its slug, not its host or port', async () => {
    upstream.respondWith(() => ({ status: 200, headerDelayMs: 2_000, body: Buffer.from('{}') }));
    const f = await failure('gpt-4o-mini');
    expect(f).to.include({ status: 504, code: 'upstream_timeout' });
    expect(f.message).to.equal('The upstream provider openai did not answer in time');
    for (const leak of addressesOf(upstream.url)) expect(f.message).to.not.include(leak);
  });
});
