import { expect } from 'chai';
import type { EndpointKey, Usage } from '../../core/usage';
import { PriceCatalog } from '../../pricing/catalog';
import { priceUsage, type PricedUsage } from '../../pricing/cost';
import { USAGE_PARSERS } from '../../providers/registry';
import { fixtureBytes, fixtureJson } from '../helpers/fixtures';
import { SseDecoder } from '../../core/sse';
import { audioPreviewRates } from '../helpers/audio-rates';

const catalog = new PriceCatalog();
const openai = USAGE_PARSERS['openai'];
const anthropic = USAGE_PARSERS['anthropic'];

/** An SSE fixture through a fresh accumulator of `endpoint` (OpenAI's unless told), as the gateway feeds it. */
function streamed(endpoint: EndpointKey, path: string, parser = openai): Usage | undefined {
  const acc = parser.createStreamAccumulator(endpoint);
  const decoder = new SseDecoder();
  for (const e of decoder.push(fixtureBytes(path))) acc.push(e);
  for (const e of decoder.end()) acc.push(e);
  return acc.result();
}

function priced(model: string, usage: Usage | undefined, from: PriceCatalog = catalog): PricedUsage {
  return priceUsage(from.lookup('openai', model), usage, { endpoint: 'chat.completions', counted: true });
}

describe('the service tier an answer names, and audio tokens, priced (BUILT fixtures)', () => {
  describe('service tiers', () => {
    it('o3 answered at flex: $1 / $4 per 1M, $0.004032 (chat_completion_flex_built.json)', () => {
      // 1,000 x $1 + 758 x $4 per 1M = $0.001 + $0.003032; at the standard rates it would be $0.008064.
      const usage = openai.fromJson('chat.completions', fixtureJson('openai/chat_completion_flex_built.json'));
      expect(usage).to.include({ inputTokens: 1000, outputTokens: 758, serviceTier: 'flex' });
      expect(priced('o3-2025-04-16', usage)).to.include({ costPico: 4_032_000_000n, provenanceHint: 'priced' });
    });

    it('gpt-4o answered at priority: $4.25 / $17 per 1M, $0.017 (chat_completion_priority_built.json)', () => {
      const usage = openai.fromJson('chat.completions', fixtureJson('openai/chat_completion_priority_built.json'));
      expect(priced('gpt-4o-2024-08-06', usage).costPico).to.equal(17_000_000_000n);
    });

    it('gpt-5 at flex in a Responses answer, cached input at the flex cache rate (responses_flex_built.json)', () => {
      // 2,000 x $0.625 + 1,568 x $0.0625 + 300 x $5 per 1M = $0.00125 + $0.000098 + $0.0015.
      const usage = openai.fromJson('responses', fixtureJson('openai/responses_flex_built.json'));
      expect(usage).to.include({ inputTokens: 2000, cacheReadTokens: 1568, outputTokens: 300, serviceTier: 'flex' });
      expect(priced('gpt-5-2025-08-07', usage).costPico).to.equal(2_848_000_000n);
    });

    it('gpt-5 at priority named by response.completed of a stream (responses_stream_priority_built.sse)', () => {
      // 2,000 x $2.5 + 1,568 x $0.25 + 300 x $20 per 1M = $0.005 + $0.000392 + $0.006; standard: $0.005696.
      const usage = streamed('responses', 'openai/responses_stream_priority_built.sse');
      expect(usage?.serviceTier).to.equal('priority');
      expect(priced('gpt-5', usage).costPico).to.equal(11_392_000_000n);
      expect(priced('gpt-5', { ...usage, serviceTier: 'default' }).costPico).to.equal(5_696_000_000n);
    });

    it('a tier the catalog does not price is unpriced, never the standard rate', () => {
      const usage = openai.fromJson('chat.completions', fixtureJson('openai/chat_completion_flex_built.json'))!;
      // gpt-4o has batch and priority rates, no flex; nobody publishes a "scale" rate.
      for (const tier of ['flex', 'scale']) {
        const r = priced('gpt-4o', { ...usage, serviceTier: tier });
        expect(r.costPico, tier).to.equal(null);
        expect(r.reason).to.equal(`openai/gpt-4o has no price for the ${tier} service tier`);
      }
    });

    it('a prompt past a long-context threshold under a tier is unpriced (no source gives that rate)', () => {
      const tiered = PriceCatalog.fromConfig({
        models: [
          {
            provider: 'openai',
            model: 'long-1',
            input: '1',
            output: '2',
            long_context: [{ above_input_tokens: 1000, input: '2', output: '4' }],
            service_tiers: { flex: { input: '0.5', output: '1' } },
          },
        ],
      });
      expect(priced('long-1', { inputTokens: 900, outputTokens: 10, serviceTier: 'flex' }, tiered).costPico).to.equal(
        460_000_000n,
      );
      const r = priced('long-1', { inputTokens: 1001, outputTokens: 10, serviceTier: 'flex' }, tiered);
      expect(r.costPico).to.equal(null);
      expect(r.reason).to.equal('openai/long-1 has no long-context price for the flex service tier');
    });

    describe("Anthropic's usage.service_tier", () => {
      const claude = (model: string, usage: Usage | undefined): PricedUsage =>
        priceUsage(catalog.lookup('anthropic', model), usage, { endpoint: 'messages', counted: true });

      const claudeStream = (path: string): Usage | undefined => streamed('messages', path, anthropic);

      it('standard is the standard rate (messages_basic.json, recorded)', () => {
        const usage = anthropic.fromJson('messages', fixtureJson('anthropic/messages_basic.json'));
        expect(usage?.serviceTier).to.equal('standard');
        // 222 x $3 + 39 x $15 per 1M.
        expect(claude('claude-sonnet-4-5', usage).costPico).to.equal(1_251_000_000n);
      });

      it('a batch result line is priced at the bundled batch rates, half (message_batch_results_built.jsonl)', () => {
        const line = JSON.parse(fixtureBytes('anthropic/message_batch_results_built.jsonl').toString().split('\n')[0]);
        const usage = anthropic.fromJson('messages', line.result.message);
        expect(usage).to.include({ inputTokens: 800, outputTokens: 200, serviceTier: 'batch' });
        // claude-haiku-4-5-20251001 at $0.50 / $2.50 per 1M: $0.0004 + $0.0005; standard would be $0.0018.
        expect(claude(line.result.message.model, usage)).to.include({
          costPico: 900_000_000n,
          provenanceHint: 'priced',
        });
      });

      it('cache writes in a batch are half the 5-minute write rate too (messages_cache_creation.json, recorded)', () => {
        const usage = anthropic.fromJson('messages', fixtureJson('anthropic/messages_cache_creation.json'))!;
        expect(usage).to.include({ inputTokens: 4, cacheWriteTokens: 1163, outputTokens: 187 });
        // claude-3-5-sonnet: 4 x $3 + 1,163 x $3.75 + 187 x $15 per 1M standard; every rate halved in a batch.
        expect(claude('claude-3-5-sonnet-20240620', usage).costPico).to.equal(7_178_250_000n);
        expect(claude('claude-3-5-sonnet-20240620', { ...usage, serviceTier: 'batch' }).costPico).to.equal(
          3_589_125_000n,
        );
      });

      it('priority, which Anthropic bills by commitment, is unpriced, never the standard rate (stream, BUILT)', () => {
        const usage = claudeStream('anthropic/messages_stream_priority_built.sse');
        expect(usage).to.include({ inputTokens: 17, outputTokens: 10, serviceTier: 'priority' });
        const r = claude('claude-sonnet-4-5-20250929', usage);
        expect(r.costPico).to.equal(null);
        expect(r.reason).to.equal('anthropic/claude-sonnet-4-5 has no price for the priority service tier');
        // The recorded stream it is built from, served at standard: 17 x $3 + 10 x $15 per 1M.
        expect(claude('claude-sonnet-4-5', claudeStream('anthropic/messages_stream.sse')).costPico).to.equal(
          201_000_000n,
        );
      });

      it("a deployment's own priority rates (its commitment) price a priority answer", () => {
        const committed = PriceCatalog.fromConfig({
          models: [
            {
              provider: 'anthropic',
              model: 'claude-sonnet-4-5',
              input: '3',
              output: '15',
              service_tiers: { priority: { input: '3.3', output: '16.5' } },
            },
          ],
        });
        const usage = claudeStream('anthropic/messages_stream_priority_built.sse');
        const r = priceUsage(committed.lookup('anthropic', 'claude-sonnet-4-5-20250929'), usage, {
          endpoint: 'messages',
          counted: true,
        });
        // 17 x $3.3 + 10 x $16.5 per 1M.
        expect(r.costPico).to.equal(221_100_000n);
      });

      it('a batch prompt past the long-context threshold is unpriced: the catalog holds no long-context batch rate', () => {
        const r = claude('claude-sonnet-4-5', { inputTokens: 200_001, outputTokens: 10, serviceTier: 'batch' });
        expect(r.costPico).to.equal(null);
        expect(r.reason).to.equal('anthropic/claude-sonnet-4-5 has no long-context price for the batch service tier');
      });
    });

    it('a discount applies to the tier rates as to the standard ones', () => {
      const discounted = PriceCatalog.fromConfig({ discounts: { openai: '0.1' } });
      const usage = openai.fromJson('chat.completions', fixtureJson('openai/chat_completion_flex_built.json'));
      expect(priced('o3', usage, discounted).costPico).to.equal(3_628_800_000n);
    });
  });

  describe('audio tokens in chat', () => {
    const withAudioRates = audioPreviewRates();
    // 20 text x $2.5 + 100 audio x $40 + 18 text x $10 + 80 audio x $80 per 1M = $0.01063 (as text: $0.00128).
    const AUDIO_CHAT_PICO = 10_630_000_000n;
    const expected = {
      inputTokens: 20,
      inputAudioTokens: 100,
      outputTokens: 18,
      outputAudioTokens: 80,
      cacheReadTokens: 0,
      reasoningTokens: 0,
      serviceTier: 'default',
    };

    it('reads them apart from the text tokens, JSON (chat_completion_audio_built.json)', () => {
      const usage = openai.fromJson('chat.completions', fixtureJson('openai/chat_completion_audio_built.json'));
      expect(usage).to.deep.equal(expected);
      expect(priced('gpt-4o-audio-preview-2025-06-03', usage, withAudioRates).costPico).to.equal(AUDIO_CHAT_PICO);
    });

    it("the bundled catalog prices them at OpenAI's audio rates, its dated snapshots too, but not 2024-10-01's", () => {
      const usage = openai.fromJson('chat.completions', fixtureJson('openai/chat_completion_audio_built.json'));
      for (const model of [
        'gpt-4o-audio-preview',
        'gpt-4o-audio-preview-2024-12-17',
        'gpt-4o-audio-preview-2025-06-03',
      ])
        expect(priced(model, usage).costPico, model).to.equal(AUDIO_CHAT_PICO);
      expect(
        priced('gpt-4o-audio-preview', streamed('chat.completions', 'openai/chat_stream_audio_built.sse')).costPico,
      ).to.equal(AUDIO_CHAT_PICO);
      // Billed otherwise (third-party tables: $100 / $200 per 1M audio tokens): unpriced, never another snapshot's rates.
      expect(priced('gpt-4o-audio-preview-2024-10-01', usage).costPico).to.equal(null);
    });

    it('and in a stream (chat_stream_audio_built.sse)', () => {
      const usage = streamed('chat.completions', 'openai/chat_stream_audio_built.sse');
      expect(usage).to.deep.equal(expected);
      expect(priced('gpt-4o-audio-preview', usage, withAudioRates).costPico).to.equal(AUDIO_CHAT_PICO);
    });

    it('a price without audio rates leaves an audio answer unpriced, never priced as text', () => {
      const textOnly = PriceCatalog.fromConfig({
        models: [{ provider: 'openai', model: 'gpt-4o-audio-preview', input: '2.5', output: '10' }],
      });
      const usage = openai.fromJson('chat.completions', fixtureJson('openai/chat_completion_audio_built.json'));
      const r = priced('gpt-4o-audio-preview', usage, textOnly);
      expect(r.costPico).to.equal(null);
      expect(r.reason).to.match(/no input_audio rate for 100 units/);
    });

    it('text answers reporting audio_tokens 0 keep no audio bucket (chat_completion_reasoning_tokens.json)', () => {
      const usage = openai.fromJson('chat.completions', fixtureJson('openai/chat_completion_reasoning_tokens.json'));
      expect(usage).to.not.have.any.keys('inputAudioTokens', 'outputAudioTokens');
    });
  });
});
