import { expect } from 'chai';
import { importLiteLlm, importLiteLlmText } from '../../pricing/litellm';

/** Entries written as LiteLLM's file writes them (per-token floats), one rule of the import each. */
const FILE = `{
  "sample_spec": { "litellm_provider": "openai", "input_cost_per_token": 1e-06 },
  "chat-a": { "litellm_provider": "openai", "mode": "chat", "input_cost_per_token": 2.5e-06, "output_cost_per_token": 1e-05,
    "cache_read_input_token_cost": 1.25e-06, "max_input_tokens": 128000, "max_output_tokens": 16384, "deprecation_date": "2027-01-01" },
  "text-completion-openai/old-b": { "litellm_provider": "text-completion-openai", "mode": "completion", "input_cost_per_token": 2e-06,
    "max_input_tokens": 0, "max_output_tokens": 1.5 },
  "gemini/tiered-c": { "litellm_provider": "gemini", "input_cost_per_token": 1.25e-06, "output_cost_per_token": 1e-05,
    "input_cost_per_token_above_200k_tokens": 2.5e-06, "output_cost_per_token_above_200k_tokens": 1.5e-05,
    "input_cost_per_token_above_128k_tokens": 2e-06, "cache_read_input_token_cost_above_200k_tokens": 6.25e-07,
    "search_context_cost_per_query": { "search_context_size_low": 0.014, "search_context_size_medium": 0.035, "search_context_size_high": 0.05 } },
  "claude-d": { "litellm_provider": "anthropic", "mode": "chat", "input_cost_per_token": 3e-06, "output_cost_per_token": 1.5e-05,
    "cache_creation_input_token_cost": 3.75e-06, "cache_creation_input_token_cost_above_1hr": 6e-06, "cache_read_input_token_cost": 3e-07 },
  "perplexity/sonar-e": { "litellm_provider": "perplexity", "input_cost_per_token": 1e-06, "output_cost_per_token": 1e-06,
    "search_context_cost_per_query": { "search_context_size_low": 0.005, "search_context_size_high": 0.012, "search_context_size_medium": "n/a" } },
  "perplexity/sonar-deep-research": { "litellm_provider": "perplexity", "input_cost_per_token": 2e-06, "output_cost_per_token": 8e-06,
    "citation_cost_per_token": 2e-06, "output_cost_per_reasoning_token": 3e-06,
    "search_context_cost_per_query": { "search_context_size_low": 0.005, "search_context_size_medium": 0.005, "search_context_size_high": 0.005 } },
  "perplexity/sonar-f": { "litellm_provider": "perplexity", "input_cost_per_token": 1e-06, "search_context_cost_per_query": null },
  "xai/search-g": { "litellm_provider": "xai", "mode": "search", "input_cost_per_query": 0.025 },
  "groq/rerank-h": { "litellm_provider": "groq", "mode": "rerank", "input_cost_per_request": 0.002 },
  "mistral/odd-mode": { "litellm_provider": "mistral", "mode": "ocr", "input_cost_per_token": 1e-06 },
  "deepseek/no-mode": { "litellm_provider": "deepseek", "mode": 7, "output_cost_per_token": 1e-06 },
  "dall-e-i": { "litellm_provider": "openai", "mode": "image_generation", "input_cost_per_pixel": 1.9e-08 },
  "bad-negative": { "litellm_provider": "openai", "input_cost_per_token": -1e-06 },
  "bad-string": { "litellm_provider": "openai", "output_cost_per_token": "0.000001" },
  "bad-unit": { "litellm_provider": "openai", "input_cost_per_token": 0.5 },
  "bad-query": { "litellm_provider": "xai", "input_cost_per_query": "free" },
  "bedrock/x": { "litellm_provider": "bedrock", "input_cost_per_token": 1e-06 },
  "no-provider": { "input_cost_per_token": 1e-06 },
  "not-an-object": 3,
  "null-entry": null,
  "openai/chat-a": { "litellm_provider": "openai", "input_cost_per_token": 9e-06 }
}`;

describe('LiteLLM price file import', () => {
  it('imports every gateway-provider entry with its prices per 1M tokens, fees, tiers and limits', () => {
    const { models } = importLiteLlmText(FILE);
    expect(models).to.deep.equal([
      {
        provider: 'openai',
        model: 'chat-a',
        kind: 'chat',
        litellm_key: 'chat-a',
        input: '2.5',
        output: '10',
        cache_read: '1.25',
        context_window: 128000,
        max_output_tokens: 16384,
        deprecation_date: '2027-01-01',
      },
      {
        provider: 'openai',
        model: 'old-b',
        kind: 'completion',
        litellm_key: 'text-completion-openai/old-b',
        input: '2',
      },
      {
        provider: 'gemini',
        model: 'tiered-c',
        kind: 'chat',
        litellm_key: 'gemini/tiered-c',
        input: '1.25',
        output: '10',
        long_context: [
          { above_input_tokens: 128000, input: '2' },
          { above_input_tokens: 200000, input: '2.5', output: '15', cache_read: '0.625' },
        ],
        search_query_fee: '0.035',
      },
      {
        provider: 'anthropic',
        model: 'claude-d',
        kind: 'chat',
        litellm_key: 'claude-d',
        input: '3',
        output: '15',
        cache_write: '3.75',
        cache_write_1h: '6',
        cache_read: '0.3',
      },
      {
        provider: 'perplexity',
        model: 'sonar-e',
        kind: 'chat',
        litellm_key: 'perplexity/sonar-e',
        input: '1',
        output: '1',
        request_fee: { low: '0.005', high: '0.012' },
      },
      {
        provider: 'perplexity',
        model: 'sonar-deep-research',
        kind: 'chat',
        litellm_key: 'perplexity/sonar-deep-research',
        input: '2',
        output: '8',
        citation: '2',
        reasoning: '3',
        search_query_fee: '0.005',
      },
      { provider: 'perplexity', model: 'sonar-f', kind: 'chat', litellm_key: 'perplexity/sonar-f', input: '1' },
      { provider: 'xai', model: 'search-g', kind: 'search', litellm_key: 'xai/search-g', request_fee: '0.025' },
      { provider: 'groq', model: 'rerank-h', kind: 'rerank', litellm_key: 'groq/rerank-h', request_fee: '0.002' },
      { provider: 'mistral', model: 'odd-mode', kind: 'ocr', litellm_key: 'mistral/odd-mode', input: '1' },
      { provider: 'deepseek', model: 'no-mode', kind: 'chat', litellm_key: 'deepseek/no-mode', output: '1' },
    ]);
  });

  it('lists every entry it did not import, with the reason', () => {
    expect(importLiteLlmText(FILE).skipped).to.deep.equal([
      {
        provider: 'openai',
        model: 'dall-e-i',
        field: '*',
        reason: 'no per-token or per-request price (non-token pricing is not represented)',
      },
      { provider: 'openai', model: 'bad-negative', field: '*', reason: 'input_cost_per_token: negative: -0.000001' },
      {
        provider: 'openai',
        model: 'bad-string',
        field: '*',
        reason: 'output_cost_per_token: not a number: "0.000001"',
      },
      {
        provider: 'openai',
        model: 'bad-unit',
        field: '*',
        reason: 'input_cost_per_token: 0.5 per token is implausible (unit error?)',
      },
      { provider: 'xai', model: 'bad-query', field: '*', reason: 'input_cost_per_query: not a number: "free"' },
      {
        provider: 'bedrock',
        model: 'bedrock/x',
        field: '*',
        reason: 'litellm_provider "bedrock" is not a gateway provider',
      },
      { provider: '', model: 'no-provider', field: '*', reason: 'litellm_provider "" is not a gateway provider' },
      { provider: '', model: 'not-an-object', field: '*', reason: 'entry is not an object' },
      { provider: '', model: 'null-entry', field: '*', reason: 'entry is not an object' },
      {
        provider: 'openai',
        model: 'openai/chat-a',
        field: '*',
        reason: 'same API id openai/chat-a as key chat-a, which was imported',
      },
    ]);
  });

  it('maps LiteLLM modes to catalog kinds, keeping unknown ones', () => {
    const modes = [
      'chat',
      'responses',
      'completion',
      'embedding',
      'image_generation',
      'image_edit',
      'audio_transcription',
      'audio_speech',
      'moderation',
      'moderations',
      'rerank',
      'search',
      'video_generation',
      'ocr',
    ];
    const file = Object.fromEntries(
      modes.map((mode) => [`m-${mode}`, { litellm_provider: 'openai', mode, input_cost_per_token: 1e-6 }]),
    );
    expect(importLiteLlm(file).models.map((m) => m.kind)).to.deep.equal([
      'chat',
      'chat',
      'completion',
      'embedding',
      'image',
      'image',
      'audio',
      'audio',
      'moderation',
      'moderation',
      'rerank',
      'search',
      'video',
      'ocr',
    ]);
  });

  it('skips numbers JSON cannot hold as prices, and limits that are not positive whole numbers', () => {
    const { models, skipped } = importLiteLlmText(`{
      "huge": { "litellm_provider": "openai", "input_cost_per_token": 1e999 },
      "limits": { "litellm_provider": "openai", "input_cost_per_token": 1e-6, "max_input_tokens": 1.5, "max_output_tokens": 0 },
      "limits-2": { "litellm_provider": "openai", "input_cost_per_token": 1e-6, "max_input_tokens": "8k", "max_output_tokens": -1 }
    }`);
    expect(skipped).to.deep.equal([
      { provider: 'openai', model: 'huge', field: '*', reason: 'input_cost_per_token: not a number: null' },
    ]);
    expect(models).to.deep.equal([
      { provider: 'openai', model: 'limits', kind: 'chat', litellm_key: 'limits', input: '1' },
      { provider: 'openai', model: 'limits-2', kind: 'chat', litellm_key: 'limits-2', input: '1' },
    ]);
  });

  it('search costs: only an object counts, only medium for a per-query fee, and a fee alone is a price', () => {
    const { models } = importLiteLlm({
      'sonar-s': { litellm_provider: 'perplexity', input_cost_per_token: 1e-6, search_context_cost_per_query: 'n/a' },
      'sonar-n': { litellm_provider: 'perplexity', input_cost_per_token: 1e-6, search_context_cost_per_query: 0.005 },
      'grounded-1': {
        litellm_provider: 'gemini',
        input_cost_per_token: 1e-6,
        search_context_cost_per_query: { search_context_size_low: 0.01 },
      },
      'search-only': { litellm_provider: 'xai', search_context_cost_per_query: { search_context_size_medium: 0.025 } },
    });
    expect(models).to.deep.equal([
      { provider: 'perplexity', model: 'sonar-s', kind: 'chat', litellm_key: 'sonar-s', input: '1' },
      { provider: 'perplexity', model: 'sonar-n', kind: 'chat', litellm_key: 'sonar-n', input: '1' },
      { provider: 'gemini', model: 'grounded-1', kind: 'chat', litellm_key: 'grounded-1', input: '1' },
      { provider: 'xai', model: 'search-only', kind: 'chat', litellm_key: 'search-only', search_query_fee: '0.025' },
    ]);
  });

  it('accepts per-token prices up to 0.01 USD', () => {
    const { models, skipped } = importLiteLlm({ 'x-1': { litellm_provider: 'openai', input_cost_per_token: 0.01 } });
    expect(skipped).to.deep.equal([]);
    expect(models[0].input).to.equal('10000');
  });

  it('keeps audio, image and service-tier rates, and lists every other price field it cannot carry with why', () => {
    // gpt-4o-audio-preview and gpt-4o as LiteLLM writes them: audio token rates, batch / flex / priority rates, a
    // per-second price and a cached-audio rate no usage bucket counts.
    const { models, skipped } = importLiteLlm({
      'gpt-4o-audio-preview': {
        litellm_provider: 'openai',
        mode: 'chat',
        input_cost_per_token: 2.5e-6,
        output_cost_per_token: 1e-5,
        input_cost_per_audio_token: 4e-5,
        output_cost_per_audio_token: 8e-5,
        cache_read_input_audio_token_cost: 2.5e-6,
        output_cost_per_second: 0.00025,
      },
      'gpt-4o': {
        litellm_provider: 'openai',
        mode: 'chat',
        input_cost_per_token: 2.5e-6,
        output_cost_per_token: 1e-5,
        input_cost_per_token_batches: 1.25e-6,
        output_cost_per_token_batches: 5e-6,
        input_cost_per_token_priority: 4.25e-6,
        output_cost_per_token_priority: 1.7e-5,
        cache_read_input_token_cost_priority: 2.125e-6,
      },
    });
    expect(models).to.deep.equal([
      {
        provider: 'openai',
        model: 'gpt-4o-audio-preview',
        kind: 'chat',
        litellm_key: 'gpt-4o-audio-preview',
        input: '2.5',
        output: '10',
        input_audio: '40',
        output_audio: '80',
      },
      {
        provider: 'openai',
        model: 'gpt-4o',
        kind: 'chat',
        litellm_key: 'gpt-4o',
        input: '2.5',
        output: '10',
        service_tiers: {
          batch: { input: '1.25', output: '5' },
          priority: { input: '4.25', output: '17', cache_read: '2.125' },
        },
      },
    ]);
    expect(skipped.map((s) => `${s.model} ${s.field}: ${s.reason}`)).to.deep.equal([
      'gpt-4o-audio-preview cache_read_input_audio_token_cost: a cache rate of a kind no usage bucket counts (cached audio, a cache-storage fee)',
      'gpt-4o-audio-preview output_cost_per_second: a per-second, per-character or per-image price: this entry is priced by its tokens',
    ]);
  });

  it('refuses a file that is not an object keyed by model id', () => {
    for (const bad of [[], null, 'prices', 42]) {
      expect(() => importLiteLlm(bad), JSON.stringify(bad)).to.throw(
        'LiteLLM price file: expected a JSON object keyed by model id',
      );
    }
  });
});
