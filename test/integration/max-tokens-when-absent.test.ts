import Anthropic from '@anthropic-ai/sdk';
import { expect } from 'chai';
import OpenAI from 'openai';
import { waitForRecords } from '../helpers/admin';
import {
  ANTHROPIC_KEY,
  OPENAI_KEY,
  startTestGateway,
  type TestGateway,
  useGatewayPerTest,
  workspaceWith,
} from '../helpers/gateway';
import { TestUpstream, type ReceivedRequest } from '../helpers/upstream';

const CAP = 100;

/** The bytes a client sent, with `"field":value` added before the closing brace: what a capped request must look like. */
function appended(sent: Buffer, field: string, value: number): string {
  const text = sent.toString('utf8');
  const end = text.lastIndexOf('}');
  return `${text.slice(0, end)},"${field}":${value}${text.slice(end)}`;
}

/**
 * limits.max_tokens_when_absent: a workspace cap binds requests that name no output limit too. With `cap` (the
 * default) the gateway writes the provider's own field; the rest of the body goes upstream byte for byte. The
 * clients are the official SDKs; each call is also sent straight to the loopback provider, so the bytes the
 * gateway forwarded can be compared with the bytes the SDK wrote.
 */
describe('max_tokens caps when the request names no limit', () => {
  const upstream = new TestUpstream();
  let gw: TestGateway;
  useGatewayPerTest(upstream, () => gw);
  const start = async (when?: string) => {
    const mode = when ? `, max_tokens_when_absent: ${when}` : '';
    gw = await startTestGateway(upstream.url, workspaceWith(`{ max_tokens: ${CAP}${mode} }`));
  };
  const openai = (baseURL: string, headers: Record<string, string> = {}) =>
    new OpenAI({ apiKey: OPENAI_KEY, baseURL, maxRetries: 0, defaultHeaders: headers });
  const viaGateway = () => openai(`${gw.url}/v1`, { 'X-Gateway-Key': gw.key });
  const direct = () => openai(`${upstream.url}/openai/v1`);
  const anthropic = (baseURL: string, headers: Record<string, string> = {}) =>
    new Anthropic({ apiKey: ANTHROPIC_KEY, baseURL, maxRetries: 0, defaultHeaders: headers });

  /** Sends the same SDK call straight to the provider and through the gateway; returns what the provider got from each. */
  async function both(
    call: (c: OpenAI) => Promise<unknown>,
  ): Promise<{ sent: ReceivedRequest; forwarded: ReceivedRequest }> {
    await call(direct());
    const sent = upstream.last();
    await call(viaGateway());
    return { sent, forwarded: upstream.last() };
  }

  describe('cap (the default)', () => {
    beforeEach(() => start());

    it('OpenAI chat: max_completion_tokens is appended, every other byte as the SDK sent it; header and record say so', async () => {
      const chat = {
        model: 'gpt-4o-mini',
        messages: [{ role: 'user' as const, content: 'héllo "quoted" \u2028 1e3' }],
        temperature: 1.0,
        metadata: { z: '1', a: '2' },
      };
      const { sent, forwarded } = await both((c) => c.chat.completions.create(chat));
      expect(forwarded.body.toString('utf8')).to.equal(appended(sent.body, 'max_completion_tokens', CAP));
      expect(JSON.parse(forwarded.body.toString()).max_tokens, 'not the field reasoning models refuse').to.equal(
        undefined,
      );

      const { response, data } = await viaGateway().chat.completions.create(chat).withResponse();
      expect(data.choices[0].message.content).to.be.a('string');
      expect(response.headers.get('x-gateway-max-tokens-applied')).to.equal(String(CAP));
      const id = response.headers.get('x-gateway-request-id');
      const records = await waitForRecords(gw, 2);
      expect(records.find((r: any) => r.id === id).tags).to.deep.include({ 'gateway.max_tokens_applied': String(CAP) });
    });

    it('OpenAI chat stream: capped the same way, streamed as usual', async () => {
      const params = {
        model: 'gpt-4o-mini',
        messages: [{ role: 'user' as const, content: 'hi' }],
        stream: true as const,
        stream_options: { include_usage: true },
      };
      const { sent, forwarded } = await both(async (c) => {
        const chunks = [];
        for await (const chunk of await c.chat.completions.create(params)) chunks.push(chunk);
        expect(chunks.at(-1)?.usage?.total_tokens).to.be.a('number');
      });
      expect(forwarded.body.toString('utf8')).to.equal(appended(sent.body, 'max_completion_tokens', CAP));
    });

    it('OpenAI responses: max_output_tokens is appended', async () => {
      const { sent, forwarded } = await both((c) => c.responses.create({ model: 'gpt-5.4', input: 'hello' }));
      expect(forwarded.body.toString('utf8')).to.equal(appended(sent.body, 'max_output_tokens', CAP));
    });

    it('an OpenAI-compatible provider declared in YAML: max_tokens is appended', async () => {
      const { sent, forwarded } = await both((c) =>
        c.chat.completions.create({ model: 'mistral-small-latest', messages: [{ role: 'user', content: 'hi' }] }),
      );
      expect(forwarded.mount).to.equal('mistral');
      expect(forwarded.body.toString('utf8')).to.equal(appended(sent.body.subarray(0), 'max_tokens', CAP));
    });

    it('Anthropic messages without max_tokens: max_tokens is set to the cap instead of a refusal', async () => {
      const params = {
        model: 'claude-haiku-4-5',
        messages: [{ role: 'user', content: 'hi' }],
      } as unknown as Anthropic.MessageCreateParamsNonStreaming;
      await anthropic(`${upstream.url}/anthropic`).messages.create(params);
      const sent = upstream.last();
      const { response } = await anthropic(gw.url, { 'X-Gateway-Key': gw.key }).messages.create(params).withResponse();
      expect(upstream.last().body.toString('utf8')).to.equal(appended(sent.body, 'max_tokens', CAP));
      expect(response.headers.get('x-gateway-max-tokens-applied')).to.equal(String(CAP));
    });

    it('a request that names a limit within the cap is forwarded unchanged, without the header', async () => {
      const chat = { model: 'gpt-4o-mini', messages: [{ role: 'user' as const, content: 'hi' }], max_tokens: 50 };
      const { sent, forwarded } = await both((c) => c.chat.completions.create(chat));
      expect(forwarded.body.equals(sent.body)).to.equal(true);
      const { response } = await viaGateway().chat.completions.create(chat).withResponse();
      expect(response.headers.get('x-gateway-max-tokens-applied')).to.equal(null);
    });

    it("a client cannot forge the record's gateway.* tag", async () => {
      const err = await openai(`${gw.url}/v1`, {
        'X-Gateway-Key': gw.key,
        'X-Gateway-Metadata-Gateway.Max-Tokens-Applied': '1',
      })
        .chat.completions.create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] })
        .then(
          () => null,
          (e: unknown) => e,
        );
      expect(err).to.be.instanceOf(OpenAI.BadRequestError);
      expect((err as InstanceType<typeof OpenAI.BadRequestError>).code).to.equal('invalid_metadata');
      expect(upstream.received).to.have.length(0);
    });
  });

  it("reject: 400 max_tokens_required naming the provider's field; nothing is sent", async () => {
    await start('reject');
    const err = await viaGateway()
      .chat.completions.create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] })
      .then(
        () => null,
        (e: unknown) => e,
      );
    expect(err).to.be.instanceOf(OpenAI.BadRequestError);
    const e = err as InstanceType<typeof OpenAI.BadRequestError>;
    expect(e.code).to.equal('max_tokens_required');
    expect(e.param).to.equal('max_completion_tokens');
    expect(e.message).to.include(`at most ${CAP}`);
    expect(upstream.received).to.have.length(0);
    expect(
      (
        await viaGateway().chat.completions.create({
          model: 'gpt-4o-mini',
          messages: [{ role: 'user', content: 'hi' }],
          max_completion_tokens: CAP,
        })
      ).choices,
    ).to.have.length(1);
  });

  it('allow: the request goes as sent, uncapped', async () => {
    await start('allow');
    const { sent, forwarded } = await both((c) =>
      c.chat.completions.create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] }),
    );
    expect(forwarded.body.equals(sent.body)).to.equal(true);
  });
});
