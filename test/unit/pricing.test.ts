import { expect } from 'chai';
import fc from 'fast-check';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SseDecoder } from '../../core/sse';
import type { Usage } from '../../core/usage';
import { USAGE_PARSERS } from '../../providers/registry';
import { fixtureBytes, fixtureJson } from '../helpers/fixtures';
import bundledJson from '../../pricing/catalog.json';
import { bundledCatalog } from '../../pricing/bundled-catalog';
import { PriceCatalog } from '../../pricing/catalog';
import { pricingConfigSchema } from '../../pricing/config';
import { priceUsage, type PricedUsage } from '../../pricing/cost';
import { decimalFromNumber, isPlainDecimal, mulDecimal, shiftDecimal } from '../../pricing/decimal';
import { importLiteLlmText } from '../../pricing/litellm';
import { BUCKETS, type ModelPrice } from '../../pricing/model-price';
import { ExactSum, formatUsd, parseUsd, picoPerToken, rateFromPerMillion, rateFromUsd } from '../../pricing/money';

const CHAT = { endpoint: 'chat.completions', counted: true } as const;
const catalog = new PriceCatalog();

function price(provider: string, model: string, from: PriceCatalog = catalog): ModelPrice {
  const p = from.lookup(provider, model);
  if (!p) throw new Error(`no price for ${provider}/${model}`);
  return p;
}

function cost(provider: string, model: string, usage: Usage, from: PriceCatalog = catalog): PricedUsage {
  return priceUsage(price(provider, model, from), usage, CHAT);
}

/** The zod error message of an invalid pricing block. */
function configError(raw: unknown): string {
  const r = pricingConfigSchema.safeParse(raw);
  if (r.success) throw new Error('expected the pricing block to be refused');
  return r.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('\n');
}

describe('pricing', () => {
  describe('money', () => {
    it('converts USD per 1M tokens to integer pico-USD per token', () => {
      // 1 USD / 1M tokens = 1e12 pico / 1e6 tokens = 1,000,000 pico per token
      expect(picoPerToken('2.5')).to.equal(2_500_000n);
      expect(picoPerToken('0.003625')).to.equal(3_625n);
      expect(picoPerToken('0')).to.equal(0n);
      expect(picoPerToken('150')).to.equal(150_000_000n);
    });

    it('keeps prices with more than 6 decimals exact and rounds only the final total', () => {
      // "1.0000005" per 1M = 1,000,000.5 pico per token: a fraction, kept as num / 10^scale
      expect(rateFromPerMillion('1.0000005')).to.deep.equal({ num: 10_000_005n, scale: 1 });
      expect(() => picoPerToken('1.0000005')).to.throw(RangeError);
      // 3 tokens = 3,000,001.5 pico -> rounded once, half away from zero, to 3,000,002
      // (rounding per token first would give 3 x 1,000,001 = 3,000,003)
      const r = rateFromPerMillion('1.0000005');
      expect(new ExactSum().add(3n, r).toPico()).to.equal(3_000_002n);
      expect(new ExactSum().add(1n, r).add(1n, r).toPico()).to.equal(2_000_001n);
      expect(new ExactSum().add(3n, r).exact()).to.deep.equal({ coef: 30_000_015n, scale: 1 });
    });

    it('converts fees in USD to pico-USD', () => {
      expect(rateFromUsd('0.005')).to.deep.equal({ num: 5_000_000_000n, scale: 0 });
    });

    it('parses and formats USD exactly, without floats', () => {
      expect(parseUsd('0.0125')).to.equal(12_500_000_000n);
      expect(parseUsd('0.01355025')).to.equal(13_550_250_000n);
      expect(parseUsd('1.5e-7')).to.equal(150_000n);
      expect(parseUsd('12')).to.equal(12_000_000_000_000n);
      // 1.5 pico: the one rounding, half away from zero
      expect(parseUsd('0.0000000000015')).to.equal(2n);
      expect(() => parseUsd('abc')).to.throw();
      expect(() => parseUsd('NaN')).to.throw();
      expect(formatUsd(270_000_000n)).to.equal('0.00027');
      expect(formatUsd(0n)).to.equal('0');
      expect(formatUsd(1n)).to.equal('0.000000000001');
      expect(formatUsd(12_500_000_000_000n)).to.equal('12.5');
      expect(formatUsd(-270_000_000n)).to.equal('-0.00027');
      expect(formatUsd(270_000_000n, 6)).to.equal('0.000270');
      expect(formatUsd(123_456_789n, 6)).to.equal('0.000123');
      expect(formatUsd(123_500_000n, 6)).to.equal('0.000124');
      expect(formatUsd(1_000_000_000_000n, 2)).to.equal('1.00');
      expect(formatUsd(1n, 14)).to.equal('0.00000000000100');
      fc.assert(fc.property(fc.bigInt({ min: -(10n ** 20n), max: 10n ** 20n }), (p) => parseUsd(formatUsd(p)) === p));
    });

    it('reads JSON numbers back as the decimal they were written as', () => {
      expect(decimalFromNumber(3.625e-9)).to.equal('0.000000003625');
      expect(decimalFromNumber(1e-6)).to.equal('0.000001');
      expect(decimalFromNumber(0.00000015)).to.equal('0.00000015');
      expect(decimalFromNumber(2.5e-6)).to.equal('0.0000025');
      expect(decimalFromNumber(0.15)).to.equal('0.15');
      expect(decimalFromNumber(1e21)).to.equal('1000000000000000000000');
      expect(decimalFromNumber(-0)).to.equal('0');
      expect(shiftDecimal(decimalFromNumber(3.625e-9), 6)).to.equal('0.003625');
      expect(shiftDecimal(decimalFromNumber(1.5e-7), 6)).to.equal('0.15');
      expect(mulDecimal('0.15', '0.8')).to.equal('0.12');
      expect(() => decimalFromNumber(Number.NaN)).to.throw();
    });
  });

  describe('bundled catalog', () => {
    it('has every model of the source, with valid decimal prices and no rounding needed', () => {
      const raw = bundledJson as unknown as { models: Record<string, unknown>[]; skipped: unknown[] };
      expect(raw.models).to.have.length(120);
      const slugs = new Set([
        'openai',
        'anthropic',
        'perplexity',
        'openrouter',
        'gemini',
        'mistral',
        'deepseek',
        'xai',
        'groq',
      ]);
      const seen = new Set<string>();
      const decimals: string[] = [];
      const collect = (v: unknown): void => {
        if (typeof v === 'string') decimals.push(v);
        else if (typeof v === 'object' && v !== null) Object.values(v).forEach(collect);
      };
      for (const m of raw.models) {
        expect(slugs.has(m.provider as string), String(m.provider)).to.equal(true);
        const id = `${m.provider}/${m.model}`;
        expect(seen.has(id), `duplicate ${id}`).to.equal(false);
        seen.add(id);
        for (const b of BUCKETS) collect(m[b]);
        collect(m.request_fee);
        collect(m.search_query_fee);
        for (const t of (m.long_context as Record<string, unknown>[] | undefined) ?? []) {
          const { above_input_tokens, ...rates } = t;
          expect(Number.isSafeInteger(above_input_tokens)).to.equal(true);
          collect(rates);
        }
        collect(m.service_tiers);
      }
      expect(decimals.length).to.be.greaterThan(300);
      for (const d of decimals) {
        expect(typeof d, d).to.equal('string');
        expect(isPlainDecimal(d), d).to.equal(true); // no NaN, no sign, no exponent
        // every bundled price has at most 6 decimals in USD/1M: an integer pico rate (fees: at most 12)
        expect(rateFromUsd(d).scale, d).to.equal(0);
      }
      for (const m of raw.models) for (const b of BUCKETS) if (typeof m[b] === 'string') picoPerToken(m[b] as string);
      expect(() => bundledCatalog()).not.to.throw();
      expect(bundledCatalog().version).to.match(/^\d{4}-\d{2}-\d{2}\.\d+$/);
    });

    it('lists what it could not represent with a reason', () => {
      const skipped = bundledCatalog().skipped;
      expect(skipped.length).to.be.greaterThan(0);
      for (const s of skipped) expect(s.reason).to.be.a('string').and.not.equal('');
      // whisper-1's per-second price is carried (pricing/media-prices.json); gpt-image-1's per-image table is not.
      expect(skipped.some((s) => s.model === 'whisper-1' && s.field === 'non_token_pricing')).to.equal(false);
      const table = skipped.find((s) => s.model === 'gpt-image-1' && s.field === 'non_token_pricing');
      expect(table?.reason).to.equal('not used: the model is priced by its usage tokens');
    });

    it('models() gives every entry a stable created and provider slug', () => {
      const all = catalog.models();
      // The 120 of catalog.json, and dall-e-2 and gpt-4o-audio-preview, which pricing/media-prices.json adds.
      expect(all).to.have.length(122);
      expect(all.map((m) => m.id)).to.include.members(['dall-e-2', 'gpt-4o-audio-preview']);
      for (const m of all) {
        expect(Number.isSafeInteger(m.created) && m.created > 1_700_000_000).to.equal(true);
        expect(m.id).to.equal(m.model);
      }
      expect(new PriceCatalog().models().map((m) => [m.id, m.created])).to.deep.equal(
        all.map((m) => [m.id, m.created]),
      );
      expect(catalog.models('google').every((m) => m.provider === 'gemini')).to.equal(true);
      expect(catalog.models('anthropic')).to.have.length(16);
      expect(catalog.version).to.equal(bundledCatalog().version);
    });
  });

  describe('lookup', () => {
    it('matches dated snapshots only through listed aliases or when the dated id is not listed', () => {
      expect(price('openai', 'gpt-4o-2024-08-06')).to.include({ model: 'gpt-4o', input: '2.5' });
      expect(price('openai', 'gpt-4o-2024-08-06').match?.via).to.equal('alias');
      expect(price('openai', 'gpt-4o-2026-01-15').match).to.deep.equal({
        via: 'dated_snapshot',
        pricedAs: 'openai/gpt-4o',
      });
      // priced differently in the source (5 / 15): never silently mapped to gpt-4o's 2.5 / 10
      expect(catalog.lookup('openai', 'gpt-4o-2024-05-13')).to.equal(undefined);
      expect(price('anthropic', 'claude-sonnet-4-5-20250929').model).to.equal('claude-sonnet-4-5');
      expect(price('anthropic', 'claude-sonnet-4-6-20260301').match?.via).to.equal('dated_snapshot');
      expect(catalog.lookup('anthropic', 'claude-3-5-haiku-20241022')).to.equal(undefined);
      expect(price('openai', 'gpt-5.6-sol').model).to.equal('gpt-5.6');
      // four-digit suffixes are different models, not dates
      expect(price('mistral', 'mistral-medium-2508').input).to.equal('0.4');
      expect(catalog.lookup('mistral', 'mistral-medium-2509')).to.equal(undefined);
    });

    it('prices the dated snapshots of a family at the family entry, which is the price id recorded', () => {
      for (const [provider, id, family] of [
        ['anthropic', 'claude-3-5-sonnet-20240620', 'claude-3-5-sonnet'],
        ['openai', 'gpt-4-0613', 'gpt-4'],
        ['gemini', 'gemini-2.5-pro-preview-05-06', 'gemini-2.5-pro'],
      ]) {
        const p = price(provider, id);
        expect(p.match, id).to.deep.equal({ via: 'dated_snapshot', pricedAs: `${provider}/${family}` });
      }
      // a preview Google priced apart from its family stays unpriced rather than take the family's price
      expect(catalog.lookup('gemini', 'gemini-2.5-flash-preview-04-17')).to.equal(undefined);
      expect(price('gemini', 'gemini-2.5-flash-preview-05-20').model).to.equal('gemini-2.5-flash');
    });

    it('never matches fuzzily', () => {
      expect(catalog.lookup('openai', 'gpt-4o-minix')).to.equal(undefined);
      // gpt-4 is priced; its neighbours gpt-4-turbo and gpt-4-32k (and their snapshots) are other families
      for (const id of ['gpt-4-turbo', 'gpt-4-turbo-2024-04-09', 'gpt-4-32k-0613', 'gpt-4-1106-preview'])
        expect(catalog.lookup('openai', id), id).to.equal(undefined);
      expect(catalog.lookup('openai', 'ft:gpt-4o-2024-08-06:acme::abc')).to.equal(undefined);
      expect(catalog.lookup('anthropic', 'gpt-4o')).to.equal(undefined);
    });

    it('strips the provider own prefix and normalises provider names', () => {
      expect(price('gemini', 'models/gemini-2.5-pro').match?.via).to.equal('provider_prefix');
      expect(price('google', 'gemini/gemini-2.5-pro').model).to.equal('gemini-2.5-pro');
      expect(price('groq', 'openai/gpt-oss-120b').match).to.equal(undefined); // an exact Groq id
      expect(price('groq', 'groq/llama-3.3-70b-versatile').model).to.equal('llama-3.3-70b-versatile');
      expect(catalog.lookup('perplexity', 'openai/gpt-5.4')).to.equal(undefined); // not Perplexity's price
    });

    it('prices OpenRouter slugs by the vendor list price, noting the fallback', () => {
      const p = price('openrouter', 'anthropic/claude-sonnet-4.5');
      expect(p.match).to.include({ via: 'openrouter_vendor_fallback', pricedAs: 'anthropic/claude-sonnet-4-5' });
      expect(p.match?.note).to.be.a('string');
      expect(price('openrouter', 'openai/gpt-4o-mini').input).to.equal('0.15');
      expect(price('openrouter', 'google/gemini-2.5-pro').provider).to.equal('gemini');
      expect(catalog.lookup('openrouter', 'google/gemma-2-9b-it:free')).to.equal(undefined);
      expect(catalog.lookup('openrouter', 'openai/gpt-4o-mini:online')).to.equal(undefined);
      expect(catalog.lookup('openrouter', 'meta-llama/llama-3.3-70b-instruct')).to.equal(undefined);
    });
  });

  describe('priceUsage', () => {
    it('gpt-4o-mini input and output', () => {
      // 1,000 input x $0.15/1M (150,000 pico) + 200 output x $0.60/1M (600,000 pico)
      // = 150,000,000 + 120,000,000 = 270,000,000 pico = $0.00027
      const r = cost('openai', 'gpt-4o-mini', { inputTokens: 1000, outputTokens: 200 });
      expect(r).to.deep.equal({
        costPico: 270_000_000n,
        listCostPico: 270_000_000n,
        provenanceHint: 'priced',
        priceId: 'openai/gpt-4o-mini',
      });
      expect(formatUsd(r.costPico!)).to.equal('0.00027');
    });

    it('Anthropic compaction: every iteration is billed (messages_compaction_built.json and its stream)', () => {
      const anthropic = USAGE_PARSERS['anthropic'];
      // claude-opus-4-8: $5 input, $25 output, $0.50 cache read per 1M.
      // JSON: (180,000 + 23,000) input x $5/1M = $1.015; (3,500 + 1,000) output x $25/1M = $0.1125; total $1.1275.
      const json = anthropic.fromJson('messages', fixtureJson('anthropic/messages_compaction_built.json'));
      expect(cost('anthropic', 'claude-opus-4-8', json!).costPico).to.equal(1_127_500_000_000n);
      // Stream: (30,000 + 23,000) input x $5/1M = $0.265; 150,000 cache read x $0.50/1M = $0.075;
      // (3,500 + 1,000) output x $25/1M = $0.1125; total $0.4525 (the top-level counts alone: $0.14).
      const acc = anthropic.createStreamAccumulator('messages');
      for (const e of new SseDecoder().push(fixtureBytes('anthropic/messages_compaction_stream_built.sse')))
        acc.push(e);
      expect(cost('anthropic', 'claude-opus-4-8', acc.result()!).costPico).to.equal(452_500_000_000n);
    });

    it('picks the long-context tier per iteration, not from the summed prompt', () => {
      // claude-sonnet-4-5: $3 / $15 per 1M, above 200,000 prompt tokens $6 / $22.50. The iterations (180,000 and
      // 23,000 input) are each under 200,000 although their sum is not: 203,000 x $3/1M = $0.609 and
      // 4,500 x $15/1M = $0.0675, total $0.6765 (the summed prompt at the long-context rates would be $1.31925).
      const json = USAGE_PARSERS['anthropic'].fromJson(
        'messages',
        fixtureJson('anthropic/messages_compaction_built.json'),
      );
      expect(cost('anthropic', 'claude-sonnet-4-5', json!).costPico).to.equal(676_500_000_000n);
    });

    it('prices cached tokens at the cache rate, not the input rate', () => {
      // 200 uncached x 150,000 + 800 cached x 75,000 ($0.075/1M) + 100 output x 600,000
      // = 30,000,000 + 60,000,000 + 60,000,000 = 150,000,000 pico
      const r = cost('openai', 'gpt-4o-mini', { inputTokens: 200, cacheReadTokens: 800, outputTokens: 100 });
      expect(r.costPico).to.equal(150_000_000n);
      // all 1,000 at the input rate would have been 210,000,000
      expect(r.costPico).to.not.equal(210_000_000n);
    });

    it('Anthropic 5-minute and 1-hour cache writes at their own rates', () => {
      // claude-sonnet-4-5: input $3, 5m write $3.75, 1h write $6, read $0.30, output $15 per 1M
      //   100 x 3,000,000 = 300,000,000
      // 2,000 x 3,750,000 = 7,500,000,000
      // 1,000 x 6,000,000 = 6,000,000,000
      // 5,000 x   300,000 = 1,500,000,000
      //   500 x 15,000,000 = 7,500,000,000   total 22,800,000,000 pico = $0.0228
      const r = cost('anthropic', 'claude-sonnet-4-5-20250929', {
        inputTokens: 100,
        cacheWriteTokens: 2000,
        cacheWrite1hTokens: 1000,
        cacheReadTokens: 5000,
        outputTokens: 500,
      });
      expect(r.costPico).to.equal(22_800_000_000n);
      expect(formatUsd(r.costPico!)).to.equal('0.0228');
    });

    it('Perplexity request fee by search context size (default low)', () => {
      // sonar: 11 x 1,000,000 + 392 x 1,000,000 = 403,000,000, + low fee $0.005 = 5,000,000,000
      expect(cost('perplexity', 'sonar', { inputTokens: 11, outputTokens: 392 }).costPico).to.equal(5_403_000_000n);
      // high fee $0.012 = 12,000,000,000
      expect(
        cost('perplexity', 'sonar', { inputTokens: 11, outputTokens: 392, searchContextSize: 'high' }).costPico,
      ).to.equal(12_403_000_000n);
      expect(cost('perplexity', 'sonar', { inputTokens: 11, searchContextSize: 'max' })).to.include({
        costPico: null,
        provenanceHint: 'unpriced',
      });
      // Sonar Pro: citation tokens are not billed and the search is covered by the request fee
      // 10 x 3,000,000 + 100 x 15,000,000 + medium fee $0.01 = 30,000,000 + 1,500,000,000 + 10,000,000,000
      expect(
        cost('perplexity', 'sonar-pro', {
          inputTokens: 10,
          outputTokens: 100,
          citationTokens: 500,
          searchQueries: 1,
          searchContextSize: 'medium',
        }).costPico,
      ).to.equal(11_530_000_000n);
    });

    it('Perplexity Deep Research: citations, search queries and reasoning at their own rates', () => {
      // input 100 x 2,000,000 = 200,000,000
      // output 1,000 of which 600 reasoning: 400 x 8,000,000 = 3,200,000,000; 600 x 3,000,000 = 1,800,000,000
      // citations 2,000 x 2,000,000 = 4,000,000,000
      // 3 searches x $0.005 = 15,000,000,000                  total 24,200,000,000 pico = $0.0242
      const r = cost('perplexity', 'sonar-deep-research', {
        inputTokens: 100,
        outputTokens: 1000,
        reasoningTokens: 600,
        citationTokens: 2000,
        searchQueries: 3,
      });
      expect(r.costPico).to.equal(24_200_000_000n);
    });

    it('never adds reasoning tokens on top of output tokens', () => {
      // gpt-5-nano: 1,000 output (800 of them reasoning) x 400,000 = 400,000,000
      expect(cost('openai', 'gpt-5-nano', { outputTokens: 1000, reasoningTokens: 800 }).costPico).to.equal(
        400_000_000n,
      );
    });

    describe('tool and server call fees', () => {
      const openai = USAGE_PARSERS['openai'];
      const toolsBody = () => fixtureJson('openai/responses_tools_built.json');

      it('OpenAI Responses: web searches, file searches and code interpreter containers (responses_tools_built.json)', () => {
        const usage = openai.fromJson('responses', toolsBody())!;
        // Two web_search_call items, one file_search_call, two code_interpreter_call items in one container.
        expect(usage.toolCalls).to.deep.equal({ web_search: 2, file_search: 1, code_interpreter: 1 });
        // gpt-5.5: 11 input x $5/1M = $0.000055, 5 output x $30/1M = $0.00015; web search 2 x $0.01, file search
        // $0.0025, one 1 GB container $0.03: $0.000205 + $0.0525 = $0.052705. The container fee is an estimate.
        expect(cost('openai', 'gpt-5.5-2026-04-23', usage)).to.include({ costPico: 52_705_000_000n, estimated: true });
      });

      it('web_search_preview on a non-reasoning model: $25 per 1K calls', () => {
        const body = toolsBody();
        body.model = 'gpt-4o-2024-08-06';
        body.tools[0].type = 'web_search_preview';
        const usage = openai.fromJson('responses', body)!;
        expect(usage.toolCalls).to.deep.equal({ web_search_preview: 2, file_search: 1, code_interpreter: 1 });
        // gpt-4o: 11 x $2.50/1M + 5 x $10/1M = $0.0000775; 2 x $0.025 + $0.0025 + $0.03 = $0.0825; total $0.0825775.
        expect(cost('openai', 'gpt-4o-2024-08-06', usage).costPico).to.equal(82_577_500_000n);
      });

      it('chat search models bill one web search per request', () => {
        const body = fixtureJson('openai/chat_completion_cached_tokens.json');
        body.model = 'gpt-4o-mini-search-preview-2025-03-11';
        expect(openai.fromJson('chat.completions', body)!.toolCalls).to.deep.equal({ web_search_preview: 1 });
        body.model = 'gpt-4o-mini';
        expect(openai.fromJson('chat.completions', body)!.toolCalls).to.equal(undefined);
      });

      it('Anthropic code execution is counted, not priced per request (its free hours are per organization)', () => {
        // The usage of Anthropic's code execution example: 105 input, 239 output, one code execution request.
        // claude-opus-4-8: 105 x $5/1M + 239 x $25/1M = $0.000525 + $0.005975 = $0.0065.
        const usage = USAGE_PARSERS['anthropic'].fromJson('messages', {
          usage: { input_tokens: 105, output_tokens: 239, server_tool_use: { code_execution_requests: 1 } },
        })!;
        expect(usage.toolCalls).to.deep.equal({ code_execution: 1 });
        expect(cost('anthropic', 'claude-opus-4-8', usage))
          .to.include({ costPico: 6_500_000_000n, listCostPico: 6_500_000_000n, provenanceHint: 'priced' })
          .and.to.deep.include({ unpricedCalls: { code_execution: 1 } });
      });

      it('a call the catalog has no fee for leaves the cost unknown, never a guessed zero', () => {
        const r = cost('gemini', 'gemini-2.5-flash', {
          inputTokens: 10,
          outputTokens: 1,
          toolCalls: { web_search: 1 },
        });
        expect(r.costPico).to.equal(null);
        expect(r.reason).to.match(/no fee for 1 web_search calls/);
      });

      it('every fee in the catalog names its source and date', () => {
        expect(catalog.fees().length).to.be.greaterThan(5);
        for (const f of catalog.fees()) expect(f.source.length > 20 && f.retrieved.length >= 10, f.tool).to.equal(true);
      });
    });

    describe('provider-reported cost, checked', () => {
      const sonarBody = () => fixtureJson('perplexity/sonar_chat_completion_cost_built.json');
      const sonarUsage = (totalCost?: number): Usage => {
        const body = sonarBody();
        if (totalCost !== undefined) body.usage.cost.total_cost = totalCost;
        return USAGE_PARSERS['perplexity'].fromJson('chat.completions', body)!;
      };

      it('Perplexity: the rounded usage.cost gives way to tokens + request fee, and is kept beside it', () => {
        // sonar: 11 input + 392 output tokens x $1/1M = $0.000403, plus the low request fee $0.005: $0.005403.
        // usage.cost.total_cost is 0.005 (Perplexity rounds to the tenth of a cent): as rounded, both say $0.005.
        const r = cost('perplexity', 'sonar', sonarUsage());
        expect(r).to.include({
          costPico: 5_403_000_000n,
          listCostPico: 5_403_000_000n,
          provenanceHint: 'priced',
          providerCostPico: 5_000_000_000n,
          computedCostPico: 5_403_000_000n,
          costDisagrees: false,
        });
      });

      it('flags a figure further than 1% plus half its $0.001 rounding step from the cost, at full precision', () => {
        // Computed $0.005403; the allowance is 1% of it ($0.00005403) plus half of Perplexity's step ($0.0005).
        const flagged = (figure: number) => cost('perplexity', 'sonar', sonarUsage(figure)).costDisagrees;
        expect(flagged(0.00595703), 'exactly at the allowance').to.equal(false);
        expect(flagged(0.00595704), 'one pico-dollar past it').to.equal(true);
        expect(flagged(0.00484897), 'exactly at the allowance below').to.equal(false);
        expect(flagged(0.00484896), 'one pico-dollar past it below').to.equal(true);
        // Printed with two decimals, 0.010 (0.01) is still 85% off: its digits do not widen the allowance.
        expect(flagged(0.01)).to.equal(true);
        expect(flagged(0.006), 'the next step up: 11% off').to.equal(true);
        expect(cost('perplexity', 'sonar', sonarUsage(0.01))).to.include({ costPico: 5_403_000_000n });
      });

      it("the issue's case: a figure of 0.020 against a computed $0.016204 is flagged, 0.016 agrees", () => {
        // 16 + 11,188 tokens x $1/1M = $0.011204, plus the low request fee $0.005: $0.016204.
        const usage = (figure: number): Usage => {
          const body = sonarBody();
          body.usage.prompt_tokens = 16;
          body.usage.completion_tokens = 11_188;
          body.usage.total_tokens = 11_204;
          body.usage.cost.total_cost = figure;
          return USAGE_PARSERS['perplexity'].fromJson('chat.completions', body)!;
        };
        expect(cost('perplexity', 'sonar', usage(0.02))).to.include({ costPico: 16_204_000_000n, costDisagrees: true });
        expect(cost('perplexity', 'sonar', usage(0.019)).costDisagrees).to.equal(true);
        expect(cost('perplexity', 'sonar', usage(0.016)).costDisagrees).to.equal(false);
        expect(cost('perplexity', 'sonar', usage(0.017)).costDisagrees).to.equal(true);
      });

      it('a Perplexity figure is rounded even when it prints every digit: the computed cost stands', () => {
        expect(cost('perplexity', 'sonar', sonarUsage(0.005403))).to.include({
          costPico: 5_403_000_000n,
          listCostPico: 5_403_000_000n,
          provenanceHint: 'priced',
          costDisagrees: false,
        });
      });

      it('OpenRouter stays provider-reported, and agrees with the vendor list price (chat_completion_anthropic_cache_write.json)', () => {
        // usage.cost 0.01355025; the vendor's price for claude-sonnet-4-5: 3 input x $3/1M + 3,211 cache writes x
        // $3.75/1M + 100 output x $15/1M = $0.000009 + $0.01204125 + $0.0015 = $0.01355025.
        const usage = USAGE_PARSERS['openrouter'].fromJson(
          'chat.completions',
          fixtureJson('openrouter/chat_completion_anthropic_cache_write.json'),
        )!;
        const r = priceUsage(catalog.lookup('openrouter', 'anthropic/claude-sonnet-4.5'), usage, CHAT);
        expect(r).to.include({ costPico: 13_550_250_000n, provenanceHint: 'provider_reported', costDisagrees: false });
        // Priced by another seller's list price, the computed cost never replaces OpenRouter's bill, even when that
        // bill has fewer decimals: $0.02 is kept, and flagged ($0.01355025 rounded to 2 decimals is $0.01).
        const rounded = priceUsage(
          catalog.lookup('openrouter', 'anthropic/claude-sonnet-4.5'),
          { ...usage, providerCostUsd: '0.02' },
          CHAT,
        );
        expect(rounded).to.include({
          costPico: 20_000_000_000n,
          listCostPico: 20_000_000_000n,
          provenanceHint: 'provider_reported',
          costDisagrees: true,
        });
      });
    });

    it('uses the cost OpenRouter reported, exactly', () => {
      const usage: Usage = { inputTokens: 3, cacheWriteTokens: 3211, outputTokens: 100, providerCostUsd: '0.01355025' };
      expect(priceUsage(undefined, usage, CHAT)).to.include({
        costPico: 13_550_250_000n,
        listCostPico: 13_550_250_000n,
        provenanceHint: 'provider_reported',
        providerCostPico: 13_550_250_000n,
      });
      expect(priceUsage(catalog.lookup('openrouter', 'anthropic/claude-sonnet-4.5'), usage, CHAT).costPico).to.equal(
        13_550_250_000n,
      );
      expect(priceUsage(undefined, { providerCostUsd: '1.5e-7' }, CHAT).costPico).to.equal(150_000n);
    });

    it('an unknown model is unpriced (null), never $0', () => {
      const r = priceUsage(catalog.lookup('openai', 'gpt-unknown'), { inputTokens: 10, outputTokens: 5 }, CHAT);
      expect(r.costPico).to.equal(null);
      expect(r.provenanceHint).to.equal('unpriced');
      expect(priceUsage(price('openai', 'gpt-4o'), undefined, CHAT).costPico).to.equal(null);
      // an entry without any token price (billed per second) is unpriced too
      expect(cost('openai', 'whisper-1', { inputTokens: 10 }).costPico).to.equal(null);
    });

    it('audio without the unit its model is billed by is not counted, and carries no cost', () => {
      // gpt-4o-mini-tts is billed by tokens: characters alone (speech answered as raw audio) price nothing.
      const speech = priceUsage(
        price('openai', 'gpt-4o-mini-tts'),
        { inputCharacters: 10 },
        { endpoint: 'audio.speech', counted: false },
      );
      expect(speech).to.include({ costPico: null, provenanceHint: 'not_counted' });
      // whisper-1 is billed by the second: tokens alone price nothing.
      const transcription = priceUsage(
        price('openai', 'whisper-1'),
        { inputTokens: 10 },
        { endpoint: 'audio.transcriptions', counted: false },
      );
      expect(transcription).to.include({ costPico: null, provenanceHint: 'not_counted' });
    });

    it('audio and images by their unit: seconds, characters, images by quality and size', () => {
      const opts = (endpoint: 'audio.transcriptions' | 'audio.speech' | 'images.generations') => ({
        endpoint,
        counted: false,
      });
      // $0.0001 per second, $0.000015 per character, $0.08 per hd 1024x1024 dall-e-3 image (pricing/media-prices.json).
      expect(
        priceUsage(price('openai', 'whisper-1'), { audioSeconds: 37 }, opts('audio.transcriptions')).costPico,
      ).to.equal(3_700_000_000n);
      expect(priceUsage(price('openai', 'tts-1'), { inputCharacters: 10 }, opts('audio.speech')).costPico).to.equal(
        150_000_000n,
      );
      expect(
        priceUsage(
          price('openai', 'dall-e-3'),
          { images: 2, imageSize: '1024x1024', imageQuality: 'hd' },
          opts('images.generations'),
        ).costPico,
      ).to.equal(160_000_000_000n);
    });

    it('refuses invalid counts instead of guessing', () => {
      for (const bad of [-1, 1.5, Number.NaN, Number.POSITIVE_INFINITY]) {
        expect(cost('openai', 'gpt-4o', { inputTokens: bad }).costPico).to.equal(null);
      }
    });

    it('falls back to the input rate for cache buckets without their own rate', () => {
      // gpt-4o-mini has no cache-write rate: 100 written tokens are ordinary input, 100 x 150,000
      expect(cost('openai', 'gpt-4o-mini', { cacheWriteTokens: 100 }).costPico).to.equal(15_000_000n);
      // deepseek-v4-pro: cache writes are free, reads $0.003625/1M = 3,625 pico: 1,000 x 3,625 = 3,625,000
      expect(cost('deepseek', 'deepseek-v4-pro', { cacheWriteTokens: 500, cacheReadTokens: 1000 }).costPico).to.equal(
        3_625_000n,
      );
      // gpt-5-pro has no cache-read rate: 10 x 15,000,000
      expect(cost('openai', 'gpt-5-pro', { cacheReadTokens: 10 }).costPico).to.equal(150_000_000n);
      // no 1-hour rate and no safe fallback: unpriced
      expect(cost('openai', 'gpt-4o', { cacheWrite1hTokens: 10 }).costPico).to.equal(null);
      // searches on a model with no search fee and no request fee: unpriced
      expect(cost('openai', 'gpt-4o', { inputTokens: 1, searchQueries: 1 }).costPico).to.equal(null);
    });

    it('applies the long-context tier above the threshold, counting cached tokens', () => {
      // gpt-5.4, prompt 250,000 + 30,000 cached = 280,000 > 272,000: tier $5 / $22.5, cache $0.5
      // 250,000 x 5,000,000 = 1,250,000,000,000; 30,000 x 500,000 = 15,000,000,000;
      // 1,000 x 22,500,000 = 22,500,000,000                 total 1,287,500,000,000 pico = $1.2875
      expect(
        cost('openai', 'gpt-5.4', { inputTokens: 250_000, cacheReadTokens: 30_000, outputTokens: 1000 }).costPico,
      ).to.equal(1_287_500_000_000n);
      // exactly 272,000 is not above: 272,000 x 2,500,000 + 1,000 x 15,000,000 = 695,000,000,000
      expect(cost('openai', 'gpt-5.4', { inputTokens: 272_000, outputTokens: 1000 }).costPico).to.equal(
        695_000_000_000n,
      );
      // grok-4-1-fast tier (>128k) has no cache rate: the base cache rate $0.05 applies
      // 130,000 x 400,000 + 10,000 x 50,000 + 100 x 1,000,000 = 52,000,000,000 + 500,000,000 + 100,000,000
      expect(
        cost('xai', 'grok-4-1-fast-reasoning', { inputTokens: 130_000, cacheReadTokens: 10_000, outputTokens: 100 })
          .costPico,
      ).to.equal(52_600_000_000n);
    });
  });

  describe('overrides', () => {
    it('applies a negotiated discount exactly and changes the price version', () => {
      const c = PriceCatalog.fromConfig({ discounts: { openai: '0.2' } });
      // 0.15 x 0.8 = 0.12, 0.6 x 0.8 = 0.48: 1,000 x 120,000 + 200 x 480,000 = 216,000,000 = 0.8 x 270,000,000
      expect(price('openai', 'gpt-4o-mini', c)).to.include({ input: '0.12', output: '0.48', discount: '0.2' });
      expect(cost('openai', 'gpt-4o-mini', { inputTokens: 1000, outputTokens: 200 }, c).costPico).to.equal(
        216_000_000n,
      );
      expect(price('anthropic', 'claude-haiku-4-5', c).discount).to.equal(undefined);
      expect(c.version).to.match(/^\d{4}-\d{2}-\d{2}\.\d+\+[0-9a-f]{12}$/);
      expect(c.version).to.not.equal(catalog.version);
      expect(PriceCatalog.fromConfig({ discounts: { openai: 0.2 } }).version).to.equal(c.version);
      expect(PriceCatalog.fromConfig({ discounts: { openai: '0.25' } }).version).to.not.equal(c.version);
      // the billing provider's discount applies to an OpenRouter fallback, not the vendor's
      const or = PriceCatalog.fromConfig({ discounts: { openrouter: '0.1', openai: '0.5' } });
      expect(price('openrouter', 'openai/gpt-4o', or)).to.include({ input: '2.25', discount: '0.1' });
      expect(configError({ discounts: { openai: 20 } })).to.match(/fraction.*did you mean 0\.2/);
      expect(configError({ discounts: { openai: -0.1 } })).to.match(/negative/);
    });

    it('adds and replaces model prices, numbers converted via their decimal string', () => {
      const c = PriceCatalog.fromConfig({
        models: [
          { provider: 'openai', model: 'gpt-4o', input: 2, output: 8 },
          { provider: 'openai', model: 'my-finetune', input: '0.3', output_per_token: 0.0000012 },
          { provider: 'anthropic', model: 'claude-internal', input: 3, output: 15, cache_write: 3.75 },
        ],
      });
      const p = price('openai', 'gpt-4o', c);
      expect(p).to.include({ input: '2', output: '8', origin: 'override' });
      expect(p.cache_read).to.equal(undefined); // all price fields replaced, none merged
      expect(p.context_window).to.equal(128000); // metadata kept
      expect(price('openai', 'gpt-4o-2024-11-20', c).input).to.equal('2'); // aliases follow the entry
      expect(price('openai', 'my-finetune', c)).to.include({ input: '0.3', output: '1.2', kind: 'chat' });
      // 1h cache writes with no 1h rate: unpriced, not silently priced as something else
      expect(cost('anthropic', 'claude-internal', { cacheWrite1hTokens: 10 }, c).costPico).to.equal(null);
      expect(c.models('openai').some((m) => m.model === 'my-finetune')).to.equal(true);
    });

    it('refuses negative prices and per-token values given as per-1M', () => {
      const m = (fields: Record<string, unknown>) => ({ models: [{ provider: 'openai', model: 'x', ...fields }] });
      expect(configError(m({ input: -1 }))).to.match(/models\.0\.input: must not be negative/);
      expect(configError(m({ input: '-0.5' }))).to.match(/negative/);
      // 0.0000025 per 1M is a per-token price in disguise (would bill 1,000,000x too little)
      const msg = configError(m({ input: 0.0000025 }));
      expect(msg)
        .to.match(/per-token/)
        .and.to.match(/input: 2\.5/)
        .and.to.match(/input_per_token: 0\.0000025/);
      expect(configError(m({ output_per_token: 2.5 }))).to.match(/per-1M/);
      expect(configError(m({ input: 2.5, input_per_token: 0.0000025 }))).to.match(/only one/);
      expect(configError(m({ input: 'abc' }))).to.match(/decimal/);
      expect(configError(m({ inputt: 1 }))).to.match(/inputt|Unrecognized/i);
      expect(configError(m({ input: 50_000 }))).to.match(/implausibly large/);
      const ok = pricingConfigSchema.parse(m({ input_per_token: 0.0000025, cache_read_per_1m: '0.25' }));
      expect(ok.models[0]).to.include({ input: '2.5', cache_read: '0.25' });
    });

    it('validating an already validated block changes nothing (config schema, then fromConfig)', () => {
      const once = pricingConfigSchema.parse({
        discounts: { google: 0.1 },
        models: [
          { provider: 'openai', model: 'x', input_per_token: 0.0000025, output: 10, request_fee: { low: 0.005 } },
          { provider: 'xai', model: 'y', input: '1', long_context: [{ above_input_tokens: 128000, input: 2 }] },
        ],
      });
      expect(pricingConfigSchema.parse(once)).to.deep.equal(once);
      expect(once.discounts).to.deep.equal({ gemini: '0.1' });
      expect(PriceCatalog.fromConfig(once).version).to.equal(new PriceCatalog(once).version);
    });
  });

  describe('LiteLLM import', () => {
    // Written as LiteLLM's JSON looks: per-token floats in exponent form.
    const LITELLM_JSON = `{
  "sample_spec": { "litellm_provider": "one of https://docs.litellm.ai/docs/providers", "input_cost_per_token": 0.0 },
  "gpt-4o-mini": { "litellm_provider": "openai", "mode": "chat", "input_cost_per_token": 1.5e-07,
    "output_cost_per_token": 6e-07, "cache_read_input_token_cost": 7.5e-08, "max_input_tokens": 128000 },
  "deepseek/deepseek-v4-pro": { "litellm_provider": "deepseek", "mode": "chat", "input_cost_per_token": 4.35e-07,
    "output_cost_per_token": 8.7e-07, "cache_read_input_token_cost": 3.625e-09 },
  "gemini/gemini-9-pro": { "litellm_provider": "gemini", "mode": "chat", "input_cost_per_token": 1e-06,
    "output_cost_per_token": 0.00000015, "input_cost_per_token_above_200k_tokens": 2e-06,
    "search_context_cost_per_query": { "search_context_size_low": 0.035, "search_context_size_medium": 0.035, "search_context_size_high": 0.035 } },
  "openrouter/anthropic/claude-sonnet-4.5": { "litellm_provider": "openrouter", "mode": "chat",
    "input_cost_per_token": 3e-06, "output_cost_per_token": 1.5e-05 },
  "claude-x-1": { "litellm_provider": "anthropic", "mode": "chat", "input_cost_per_token": 3e-06,
    "output_cost_per_token": 1.5e-05, "cache_creation_input_token_cost": 3.75e-06,
    "cache_creation_input_token_cost_above_1hr": 6e-06, "cache_read_input_token_cost": 3e-07 },
  "perplexity/sonar-x": { "litellm_provider": "perplexity", "mode": "chat", "input_cost_per_token": 1e-06,
    "output_cost_per_token": 1e-06,
    "search_context_cost_per_query": { "search_context_size_low": 0.005, "search_context_size_medium": 0.008, "search_context_size_high": 0.012 } },
  "bedrock/anthropic.claude-x": { "litellm_provider": "bedrock", "input_cost_per_token": 3e-06 },
  "dall-e-9": { "litellm_provider": "openai", "mode": "image_generation", "input_cost_per_pixel": 1.9e-08 },
  "bad-model": { "litellm_provider": "openai", "input_cost_per_token": -1e-06 }
}`;

    it('converts per-token floats from the JSON text exactly', () => {
      const { models, skipped } = importLiteLlmText(LITELLM_JSON);
      const by = (m: string) => models.find((x) => x.model === m)!;
      expect(by('gpt-4o-mini')).to.include({
        provider: 'openai',
        input: '0.15',
        output: '0.6',
        cache_read: '0.075',
        context_window: 128000,
      });
      expect(by('deepseek-v4-pro')).to.include({ input: '0.435', output: '0.87', cache_read: '0.003625' });
      expect(by('gemini-9-pro')).to.include({
        provider: 'gemini',
        input: '1',
        output: '0.15',
        search_query_fee: '0.035',
      });
      expect(by('gemini-9-pro').long_context).to.deep.equal([{ above_input_tokens: 200000, input: '2' }]);
      expect(by('anthropic/claude-sonnet-4.5')).to.include({ provider: 'openrouter', input: '3', output: '15' });
      expect(by('claude-x-1')).to.include({ cache_write: '3.75', cache_write_1h: '6', cache_read: '0.3' });
      expect(by('sonar-x').request_fee).to.deep.equal({ low: '0.005', medium: '0.008', high: '0.012' });
      expect(skipped.map((s) => s.model).sort()).to.deep.equal(['bad-model', 'bedrock/anthropic.claude-x', 'dall-e-9']);
      expect(skipped.find((s) => s.model === 'bad-model')!.reason).to.match(/negative/);
    });

    it('loads pricing.litellm_file relative to the config directory', () => {
      const dir = mkdtempSync(join(tmpdir(), 'tollgate-pricing-'));
      try {
        writeFileSync(join(dir, 'prices.json'), LITELLM_JSON);
        const c = PriceCatalog.fromConfig({ litellm_file: 'prices.json' }, dir);
        expect(price('openai', 'gpt-4o-mini', c).origin).to.equal('litellm');
        // OpenRouter's own price from the file now wins over the vendor fallback
        const or = price('openrouter', 'anthropic/claude-sonnet-4.5', c);
        expect(or.match).to.equal(undefined);
        expect(or.origin).to.equal('litellm');
        // 1,000 x 435,000 + 1,000,000 x 3,625 = 435,000,000 + 3,625,000,000 = 4,060,000,000
        expect(
          cost('deepseek', 'deepseek-v4-pro', { inputTokens: 1000, cacheReadTokens: 1_000_000 }, c).costPico,
        ).to.equal(4_060_000_000n);
        expect(c.version).to.not.equal(catalog.version);
        expect(c.skipped.some((s) => s.model === 'bedrock/anthropic.claude-x')).to.equal(true);
        // explicit overrides beat the LiteLLM file
        const c2 = PriceCatalog.fromConfig(
          {
            litellm_file: 'prices.json',
            models: [{ provider: 'openai', model: 'gpt-4o-mini', input: 0.1, output: 0.4 }],
          },
          dir,
        );
        expect(price('openai', 'gpt-4o-mini', c2)).to.include({ input: '0.1', origin: 'override' });
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    });
  });

  describe('exactness', () => {
    // Models without fees or long-context tiers, so cost is linear in the token counts.
    const LINEAR = [
      ['openai', 'gpt-4o-mini'],
      ['anthropic', 'claude-haiku-4-5'],
      ['anthropic', 'claude-opus-4-8'],
      ['deepseek', 'deepseek-v4-pro'],
      ['gemini', 'gemini-2.0-flash-lite'],
      ['groq', 'llama-3.1-8b-instant'],
    ] as const;
    const count = fc.option(fc.integer({ min: 0, max: 2_000_000 }), { nil: undefined });
    const usageArb = fc.record({
      inputTokens: count,
      outputTokens: count,
      cacheReadTokens: count,
      cacheWriteTokens: count,
      cacheWrite1hTokens: count,
    });

    function summed(usages: Usage[]): Usage {
      const total: Record<string, number> = {};
      for (const u of usages) {
        for (const [k, v] of Object.entries(u)) if (typeof v === 'number') total[k] = (total[k] ?? 0) + v;
      }
      return total;
    }

    function check(p: ModelPrice, all: Usage[]): void {
      // 1-hour cache writes only exist where the model has that rate (otherwise unpriced by design).
      const usages = p.cache_write_1h ? all : all.map((u) => ({ ...u, cacheWrite1hTokens: undefined }));
      let each = 0n;
      for (const u of usages) {
        const r = priceUsage(p, u, CHAT);
        if (r.costPico === null) throw new Error(`unpriced: ${r.reason}`);
        each += r.costPico;
      }
      const whole = priceUsage(p, summed(usages), CHAT).costPico;
      expect(whole).to.equal(each);
    }

    it('summing 100,000 random costs equals the cost of the summed token counts', function () {
      this.timeout(60_000);
      const usages = fc.sample(usageArb, { numRuns: 100_000, seed: 20260724 });
      for (const [provider, model] of LINEAR) check(price(provider, model), usages);
    });

    it('holds for any usage list and model (property)', () => {
      fc.assert(
        fc.property(fc.constantFrom(...LINEAR), fc.array(usageArb, { maxLength: 50 }), ([provider, model], usages) => {
          check(price(provider, model), usages);
        }),
        { numRuns: 300 },
      );
    });

    it('a discount is exact: discounted cost = undiscounted x (1 - d) for integral results', () => {
      const c = PriceCatalog.fromConfig({ discounts: { anthropic: '0.25' } });
      fc.assert(
        fc.property(usageArb, (u) => {
          const full = priceUsage(price('anthropic', 'claude-haiku-4-5'), u, CHAT).costPico!;
          const off = priceUsage(price('anthropic', 'claude-haiku-4-5', c), u, CHAT).costPico!;
          expect(off * 4n).to.equal(full * 3n);
        }),
        { numRuns: 300 },
      );
    });
  });
});
