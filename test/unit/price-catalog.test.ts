import { expect } from 'chai';
import { createHash } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PriceCatalog } from '../../pricing/catalog';
import type { ModelOverride } from '../../pricing/config';
import type { ImportedCatalog } from '../../pricing/imported-catalog';
import type { CatalogFile, CatalogModel } from '../../pricing/model-price';

/** A small catalog standing in for the bundled one, so every rule is checked against entries written here. */
const MODELS: CatalogModel[] = [
  {
    provider: 'openai',
    model: 'gpt-x',
    kind: 'chat',
    input: '2',
    output: '8',
    aliases: ['gpt-x-2025-01-01'],
    distinct_snapshots: ['gpt-x-2024-05-13'],
    context_window: 1000,
  },
  { provider: 'openai', model: 'gpt-x-mini', kind: 'chat', input: '0.5', output: '1', created: 1_700_000_000 },
  { provider: 'anthropic', model: 'claude-y-1-5', kind: 'chat', input: '3', output: '15', aliases: ['claude-y'] },
  {
    provider: 'gemini',
    model: 'gem-pro',
    kind: 'chat',
    input: '1.25',
    output: '10',
    search_query_fee: '0.035',
    long_context: [{ above_input_tokens: 200_000, input: '2.5', output: '15' }],
    service_tiers: { batch: { input: '0.625', output: '5' } },
  },
  {
    provider: 'perplexity',
    model: 'sonar-x',
    kind: 'chat',
    input: '1',
    output: '1',
    request_fee: { low: '0.005', high: '0.012' },
  },
  { provider: 'xai', model: 'grok-z', kind: 'chat', input: '3', output: '15', request_fee: '0.025' },
  { provider: 'acme', model: 'm', kind: 'chat', input: '1' },
  { provider: 'mistral', model: 'mistral-medium-2508', kind: 'chat', input: '0.4', output: '2' },
  { provider: 'deepseek', model: 'ds-chat', kind: 'chat', input: '0.28', output: '0.42' },
  { provider: 'openai', model: 'gpt-x-1-5', kind: 'chat', input: '1', output: '1' },
];
const FILE: CatalogFile = {
  version: '2026-01-01.1',
  source: 'test',
  retrieved: '2026-01-01',
  currency: 'USD',
  unit: 'per 1M tokens',
  models: MODELS,
  skipped: [],
};
/** Unix seconds of the retrieval date: the created date of entries that have none. */
const RETRIEVED = 1_767_225_600;

const catalog = (config: unknown = {}, models: CatalogModel[] = MODELS) =>
  PriceCatalog.fromConfig(config, { bundled: { ...FILE, models } });

/** How a (provider, model) was matched: [provider/model priced as, rule], or undefined when unpriced. */
function matched(provider: string, model: string, c = catalog()): [string, string] | undefined {
  const p = c.lookup(provider, model);
  return p && [`${p.provider}/${p.model}`, p.match?.via ?? 'exact'];
}

describe('price catalog', () => {
  describe('lookup rules', () => {
    it('exact ids, after trimming the model and normalising the provider', () => {
      expect(matched('openai', 'gpt-x')).to.deep.equal(['openai/gpt-x', 'exact']);
      expect(matched(' OpenAI ', ' gpt-x ')).to.deep.equal(['openai/gpt-x', 'exact']);
      expect(matched('google', 'gem-pro')).to.deep.equal(['gemini/gem-pro', 'exact']);
      expect(catalog().lookup('openai', 'gpt-x')?.match).to.equal(undefined);
    });

    it('aliases the catalog lists', () => {
      expect(catalog().lookup('openai', 'gpt-x-2025-01-01')?.match).to.deep.equal({
        via: 'alias',
        pricedAs: 'openai/gpt-x',
      });
    });

    it("the provider's own prefix, then the exact id or an alias behind it; a bare prefix is no id", () => {
      expect(catalog().lookup('openai', 'openai/gpt-x')?.match).to.deep.equal({
        via: 'provider_prefix',
        pricedAs: 'openai/gpt-x',
      });
      expect(matched('openai', 'openai/gpt-x-2025-01-01')).to.deep.equal(['openai/gpt-x', 'provider_prefix']);
      expect(matched('openai', 'openai/gpt-x-2026-02-03')).to.deep.equal(['openai/gpt-x', 'dated_snapshot']);
      for (const id of ['models/gem-pro', 'google/gem-pro', 'gemini/gem-pro'])
        expect(matched('gemini', id), id).to.deep.equal(['gemini/gem-pro', 'provider_prefix']);
      for (const [provider, id, entry] of [
        ['anthropic', 'anthropic/claude-y-1-5', 'anthropic/claude-y-1-5'],
        ['perplexity', 'perplexity/sonar-x', 'perplexity/sonar-x'],
        ['mistral', 'mistral/mistral-medium-2508', 'mistral/mistral-medium-2508'],
        ['mistral', 'mistralai/mistral-medium-2508', 'mistral/mistral-medium-2508'],
        ['deepseek', 'deepseek/ds-chat', 'deepseek/ds-chat'],
        ['xai', 'xai/grok-z', 'xai/grok-z'],
        ['xai', 'x-ai/grok-z', 'xai/grok-z'],
      ]) {
        expect(matched(provider, id), id).to.deep.equal([entry, 'provider_prefix']);
      }
      // a provider without a prefix list: its own slug
      expect(matched('acme', 'acme/m')).to.deep.equal(['acme/m', 'provider_prefix']);
      expect(matched('openai', 'openai/')).to.equal(undefined);
      expect(matched('openai', 'anthropic/claude-y-1-5')).to.equal(undefined);
      // one prefix at most
      expect(matched('openai', 'openai/openai/gpt-x')).to.equal(undefined);
    });

    it('dated snapshots (-YYYY-MM-DD and -YYYYMMDD) of a listed id or alias, with a real month and day', () => {
      expect(catalog().lookup('openai', 'gpt-x-2026-02-03')?.match).to.deep.equal({
        via: 'dated_snapshot',
        pricedAs: 'openai/gpt-x',
      });
      for (const date of ['2026-01-01', '2026-12-31', '20260101', '20261231'])
        expect(matched('openai', `gpt-x-${date}`), date).to.deep.equal(['openai/gpt-x', 'dated_snapshot']);
      for (const date of [
        '2026-00-10',
        '2026-13-01',
        '2026-01-00',
        '2026-01-32',
        '20261301',
        '20260132',
        '1999-01-01',
        '2026-1-01',
      ]) {
        expect(matched('openai', `gpt-x-${date}`), date).to.equal(undefined);
      }
      // the date ends the id: a dated variant is not the snapshot
      for (const id of ['gpt-x-2026-02-03-preview', 'gpt-x-20260203-beta', 'gpt-x-202602031'])
        expect(matched('openai', id), id).to.equal(undefined);
      // the snapshot of an alias
      expect(matched('anthropic', 'claude-y-20260101')).to.deep.equal(['anthropic/claude-y-1-5', 'dated_snapshot']);
      // a dated id the catalog says is priced differently is never mapped
      expect(matched('openai', 'gpt-x-2024-05-13')).to.equal(undefined);
      // four-digit suffixes are models of their own
      expect(matched('mistral', 'mistral-medium-2509')).to.equal(undefined);
    });

    it('older snapshots (-MMDD) and Gemini previews (-preview-MM-DD) reach their family, never another one', () => {
      const models: CatalogModel[] = [
        ...MODELS,
        { provider: 'openai', model: 'gpt-q', kind: 'chat', input: '30', output: '60' },
        { provider: 'openai', model: 'gpt-q-0314', kind: 'chat', input: '60', output: '120' },
        {
          provider: 'gemini',
          model: 'gem-flash',
          kind: 'chat',
          input: '0.3',
          output: '2.5',
          distinct_snapshots: ['gem-flash-preview-04-17'],
        },
        { provider: 'xai', model: 'grok-q', kind: 'chat', input: '3', output: '15' },
        { provider: 'xai', model: 'grok-q-0709', kind: 'chat', input: '4', output: '16' },
      ];
      const c = catalog({}, models);
      expect(matched('openai', 'gpt-q-0613', c)).to.deep.equal(['openai/gpt-q', 'dated_snapshot']);
      expect(matched('openai', 'openai/gpt-q-1231', c)).to.deep.equal(['openai/gpt-q', 'dated_snapshot']);
      expect(matched('gemini', 'gem-pro-preview-05-06', c)).to.deep.equal(['gemini/gem-pro', 'dated_snapshot']);
      expect(matched('gemini', 'models/gem-pro-preview-05-06', c)).to.deep.equal(['gemini/gem-pro', 'dated_snapshot']);
      expect(matched('gemini', 'gem-flash-preview-05-20', c)).to.deep.equal(['gemini/gem-flash', 'dated_snapshot']);
      // a snapshot with its own entry keeps it, and one the catalog says is priced differently stays unpriced
      expect(matched('openai', 'gpt-q-0314', c)).to.deep.equal(['openai/gpt-q-0314', 'exact']);
      expect(matched('xai', 'grok-q-0709', c)).to.deep.equal(['xai/grok-q-0709', 'exact']);
      expect(matched('gemini', 'gem-flash-preview-04-17', c)).to.equal(undefined);
      // the month and day must be real; a year and month (2508) is no -MMDD
      for (const id of ['gpt-q-1301', 'gpt-q-0100', 'gpt-q-0132', 'gpt-q-2508', 'gem-pro-preview-13-01'])
        expect(matched(id.startsWith('gem') ? 'gemini' : 'openai', id, c), id).to.equal(undefined);
      // one suffix, once: a family of its own (gpt-q-32k) never falls back to another family (gpt-q)
      expect(matched('openai', 'gpt-q-32k-0613', c)).to.equal(undefined);
      expect(matched('openai', 'gpt-q-0613-0613', c)).to.equal(undefined);
      expect(matched('openai', 'gpt-q-1106-preview', c)).to.equal(undefined);
      expect(matched('gemini', 'gem-pro-preview', c)).to.equal(undefined);
    });

    it("on OpenRouter, the vendor's own list price for vendor/model, noted as such", () => {
      expect(catalog().lookup('openrouter', 'anthropic/claude-y-1.5')?.match).to.deep.equal({
        via: 'openrouter_vendor_fallback',
        pricedAs: 'anthropic/claude-y-1-5',
        note: "no openrouter price; using anthropic's own list price for claude-y-1-5",
      });
      expect(matched('openrouter', 'openai/gpt-x')).to.deep.equal(['openai/gpt-x', 'openrouter_vendor_fallback']);
      expect(matched('openrouter', 'openrouter/openai/gpt-x')).to.deep.equal([
        'openai/gpt-x',
        'openrouter_vendor_fallback',
      ]);
      expect(matched('openrouter', 'google/gem-pro')).to.deep.equal(['gemini/gem-pro', 'openrouter_vendor_fallback']);
      expect(matched('openrouter', 'x-ai/grok-z')).to.deep.equal(['xai/grok-z', 'openrouter_vendor_fallback']);
      expect(matched('openrouter', 'openai/gpt-x-2025-01-01')).to.deep.equal([
        'openai/gpt-x',
        'openrouter_vendor_fallback',
      ]);
      expect(matched('openrouter', 'mistralai/mistral-medium-2508')).to.deep.equal([
        'mistral/mistral-medium-2508',
        'openrouter_vendor_fallback',
      ]);
      expect(matched('openrouter', 'deepseek/ds-chat')).to.deep.equal([
        'deepseek/ds-chat',
        'openrouter_vendor_fallback',
      ]);
      expect(matched('openrouter', 'perplexity/sonar-x')).to.deep.equal([
        'perplexity/sonar-x',
        'openrouter_vendor_fallback',
      ]);
      // the vendor id may carry the vendor's own prefix too
      expect(matched('openrouter', 'google/gemini/gem-pro')).to.deep.equal([
        'gemini/gem-pro',
        'openrouter_vendor_fallback',
      ]);
      // only Anthropic's versions are written with dots on OpenRouter
      expect(matched('openrouter', 'openai/gpt-x-1.5')).to.equal(undefined);
      // a :variant slug is priced differently: never the vendor's price, even where the vendor lists such an id
      const variant = catalog({ models: [{ provider: 'openai', model: 'gpt-x:online', input: 3 }] });
      expect(matched('openai', 'gpt-x:online', variant)).to.deep.equal(['openai/gpt-x:online', 'exact']);
      expect(matched('openrouter', 'openai/gpt-x:online', variant)).to.equal(undefined);
      for (const slug of ['openai/gpt-x:free', 'meta/llama-3', 'openai/', '/gpt-x', 'gpt-x', 'anthropic/claude-y-1.6'])
        expect(matched('openrouter', slug), slug).to.equal(undefined);
      // only OpenRouter slugs fall back to the vendor
      expect(matched('perplexity', 'openai/gpt-x')).to.equal(undefined);
      // an OpenRouter price of its own wins
      const own = catalog({ models: [{ provider: 'openrouter', model: 'openai/gpt-x', input: 2.2, output: 8.8 }] });
      expect(matched('openrouter', 'openai/gpt-x', own)).to.deep.equal(['openrouter/openai/gpt-x', 'exact']);
    });

    it('the same answer again, for the same and for other spellings, also after many distinct names', () => {
      const c = catalog();
      const first = c.lookup('openai', 'gpt-x-2026-02-03');
      expect(c.lookup('openai', 'gpt-x-2026-02-03')).to.equal(first);
      expect(c.lookup('openai', 'gpt-x-2026-02-04')).to.equal(first); // one derived price per entry and rule
      for (let i = 0; i < 5000; i++) c.lookup('openai', `unknown-${i}`);
      expect(c.lookup('openai', 'gpt-x-2026-02-03')).to.equal(first);
      expect(c.lookup('openai', 'unknown-1')).to.equal(undefined);
    });
  });

  describe('effective prices', () => {
    it('carries the entry, its id, its origin and a created date (the retrieval date when it has none)', () => {
      const c = catalog();
      expect(c.lookup('openai', 'gpt-x')).to.deep.equal({
        ...MODELS[0],
        id: 'gpt-x',
        created: RETRIEVED,
        origin: 'bundled',
      });
      expect(c.lookup('openai', 'gpt-x-mini')).to.include({ id: 'gpt-x-mini', created: 1_700_000_000 });
      expect(Object.isFrozen(c.lookup('openai', 'gpt-x'))).to.equal(true);
      expect(() => PriceCatalog.fromConfig({}, { bundled: { ...FILE, retrieved: 'someday' } })).to.throw(
        'catalog retrieved date unreadable: someday',
      );
    });

    it('an alias two entries list belongs to the first; what the source could not represent is passed on', () => {
      const c = PriceCatalog.fromConfig(
        {},
        {
          bundled: {
            ...FILE,
            models: [
              { provider: 'openai', model: 'one', kind: 'chat', input: '1', aliases: ['shared'] },
              { provider: 'openai', model: 'two', kind: 'chat', input: '2', aliases: ['shared'] },
            ],
            skipped: [
              { provider: 'openai', model: 'whisper-9', field: 'non_token_pricing', reason: 'billed per second' },
            ],
          },
        },
      );
      expect(matched('openai', 'shared', c)).to.deep.equal(['openai/one', 'alias']);
      expect(c.skipped).to.deep.equal([
        { provider: 'openai', model: 'whisper-9', field: 'non_token_pricing', reason: 'billed per second' },
      ]);
    });

    it("models() lists every entry (or one provider's) sorted by provider, then model", () => {
      const c = catalog({
        models: [
          { provider: 'openai', model: 'aaa', input: 1 },
          { provider: 'aaa-cloud', model: 'zz', input: 1 },
          { provider: 'zz-cloud', model: 'a', input: 1 },
        ],
      });
      expect(c.models().map((m) => `${m.provider}/${m.id}`)).to.deep.equal([
        'aaa-cloud/zz',
        'acme/m',
        'anthropic/claude-y-1-5',
        'deepseek/ds-chat',
        'gemini/gem-pro',
        'mistral/mistral-medium-2508',
        'openai/aaa',
        'openai/gpt-x',
        'openai/gpt-x-1-5',
        'openai/gpt-x-mini',
        'perplexity/sonar-x',
        'xai/grok-z',
        'zz-cloud/a',
      ]);
      expect(c.models('OpenAI').map((m) => m.id)).to.deep.equal(['aaa', 'gpt-x', 'gpt-x-1-5', 'gpt-x-mini']);
      expect(c.models('google').map((m) => m.id)).to.deep.equal(['gem-pro']);
      expect(c.models('openai')[0].match).to.equal(undefined);
    });
  });

  describe('overrides', () => {
    it('replace every price field of an entry together, keep its metadata and add to its aliases', () => {
      const c = catalog({
        models: [{ provider: 'gemini', model: 'gem-pro', input: 1, aliases: ['gem-pro-latest', 'gem-pro'] }],
      });
      const { created, ...p } = c.lookup('gemini', 'gem-pro')!;
      expect(created).to.equal(RETRIEVED);
      expect(p).to.deep.equal({
        provider: 'gemini',
        model: 'gem-pro',
        kind: 'chat',
        input: '1',
        aliases: ['gem-pro-latest', 'gem-pro'],
        source_note: 'prices from pricing.models (bundled entry replaced)',
        id: 'gem-pro',
        origin: 'override',
      });
      expect(matched('gemini', 'gem-pro-latest', c)).to.deep.equal(['gemini/gem-pro', 'alias']);
      // aliases of the bundled entry stay
      const x = catalog({
        models: [{ provider: 'openai', model: 'gpt-x', input: 1, aliases: ['gpt-x-latest'] }],
      }).lookup('openai', 'gpt-x')!;
      expect(x.aliases).to.deep.equal(['gpt-x-2025-01-01', 'gpt-x-latest']);
      expect(x).to.include({ context_window: 1000, input: '1' });
      expect(x).to.not.have.property('output');
    });

    it("an override without aliases keeps the entry's aliases as they were", () => {
      expect(
        catalog({ models: [{ provider: 'openai', model: 'gpt-x', input: 1 }] }).lookup('openai', 'gpt-x')?.aliases,
      ).to.deep.equal(['gpt-x-2025-01-01']);
    });

    it('add new entries, as chat models unless told otherwise', () => {
      const c = catalog({
        models: [
          { provider: 'openai', model: 'ft-1', input: 1 },
          { provider: 'openai', model: 'emb-1', input: 0.02, kind: 'embedding' },
        ],
      });
      expect(c.lookup('openai', 'ft-1')).to.deep.equal({
        provider: 'openai',
        model: 'ft-1',
        kind: 'chat',
        input: '1',
        id: 'ft-1',
        created: RETRIEVED,
        origin: 'override',
      });
      expect(c.lookup('openai', 'emb-1')?.kind).to.equal('embedding');
    });

    it("a LiteLLM file's entries are marked as such, and the explicit overrides win over them", () => {
      const dir = mkdtempSync(join(tmpdir(), 'tollgate-catalog-'));
      try {
        writeFileSync(
          join(dir, 'prices.json'),
          JSON.stringify({
            'gpt-x': { litellm_provider: 'openai', input_cost_per_token: 1e-6, output_cost_per_token: 3e-6 },
          }),
        );
        const c = PriceCatalog.fromConfig({ litellm_file: 'prices.json' }, { baseDir: dir, bundled: FILE });
        expect(c.lookup('openai', 'gpt-x')).to.include({
          input: '1',
          output: '3',
          origin: 'litellm',
          source_note: 'prices from pricing.litellm_file (bundled entry replaced)',
        });
        const both = PriceCatalog.fromConfig(
          { litellm_file: 'prices.json', models: [{ provider: 'openai', model: 'gpt-x', input: 5 }] },
          { baseDir: dir, bundled: FILE },
        );
        expect(both.lookup('openai', 'gpt-x')).to.include({ input: '5', origin: 'override' });
        expect(both.lookup('openai', 'gpt-x')).to.not.have.property('output');
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    });
  });

  describe('imported catalog (tollgate prices update)', () => {
    const imported = (models: CatalogModel[]): ImportedCatalog => ({
      version: 'imported-0123456789ab',
      source: 'test',
      retrieved: '2026-01-02T00:00:00Z',
      source_sha256: '0'.repeat(64),
      models,
      skipped: [],
    });
    const IMPORT = imported([
      { provider: 'openai', model: 'gpt-x', kind: 'chat', input: '2.5', output: '9' },
      { provider: 'openai', model: 'gpt-x-2026-03-01', kind: 'chat', input: '2.5', output: '9' },
      { provider: 'openai', model: 'gpt-x-2026-04-01', kind: 'chat', input: '3', output: '9' },
      { provider: 'openai', model: 'gpt-new', kind: 'chat', input: '1', output: '2' },
    ]);
    const withImport = (config: unknown = {}, providerPrices: ModelOverride[] = []) =>
      PriceCatalog.fromConfig(config, { bundled: FILE, imported: IMPORT, providerPrices });

    it('replaces the bundled prices of the same id and adds new models; the bundled rest stays', () => {
      const c = withImport();
      expect(c.lookup('openai', 'gpt-x')).to.include({ input: '2.5', output: '9', origin: 'imported' });
      expect(c.lookup('openai', 'gpt-x')?.aliases).to.deep.equal(['gpt-x-2025-01-01']);
      expect(c.lookup('openai', 'gpt-new')).to.include({ input: '1', origin: 'imported' });
      expect(c.lookup('openai', 'gpt-x-mini')).to.include({ input: '0.5', origin: 'bundled' });
      expect(c.version).to.match(/^2026-01-01\.1\+[0-9a-f]{12}$/);
    });

    it('a snapshot priced like its family is priced through it; one priced apart keeps its own entry', () => {
      const c = withImport({ models: [{ provider: 'openai', model: 'gpt-x', input: '2', output: '8' }] });
      // the pricing.models override of the family reaches the same-price snapshot
      expect(c.lookup('openai', 'gpt-x-2026-03-01')).to.include({ model: 'gpt-x', input: '2', origin: 'override' });
      expect(c.lookup('openai', 'gpt-x-2026-04-01')).to.include({
        model: 'gpt-x-2026-04-01',
        input: '3',
        origin: 'imported',
      });
    });

    it('keeps a bundled rate the import has none for, lists it, and a same-price snapshot still goes through the family', () => {
      const bundled: CatalogFile = {
        ...FILE,
        models: [
          ...MODELS,
          { provider: 'openai', model: 'gpt-c', kind: 'chat', input: '2', output: '8', cache_read: '1' },
        ],
      };
      // The source has no cache price for gpt-c nor for its snapshots.
      const source = imported([
        { provider: 'openai', model: 'gpt-c', kind: 'chat', input: '2.5', output: '9' },
        { provider: 'openai', model: 'gpt-c-2026-03-01', kind: 'chat', input: '2.5', output: '9' },
        { provider: 'openai', model: 'gpt-c-2026-04-01', kind: 'chat', input: '3', output: '9' },
        { provider: 'openai', model: 'gpt-x-mini-2026-03-01', kind: 'chat', input: '0.5', output: '1' },
      ]);
      const c = PriceCatalog.fromConfig({}, { bundled, imported: source });
      expect(c.lookup('openai', 'gpt-c')).to.include({
        input: '2.5',
        output: '9',
        cache_read: '1',
        origin: 'imported',
      });
      expect(c.keptBundledRates()).to.deep.equal([{ id: 'openai/gpt-c', fields: ['cache_read 1'] }]);
      // priced like its family once the kept rate is counted: priced through it, cache rate included
      expect(c.lookup('openai', 'gpt-c-2026-03-01')).to.include({ model: 'gpt-c', input: '2.5', cache_read: '1' });
      expect(c.lookup('openai', 'gpt-c-2026-04-01')).to.include({ model: 'gpt-c-2026-04-01', input: '3' });
      expect(c.lookup('openai', 'gpt-c-2026-04-01')).to.not.have.property('cache_read');
      // a snapshot at the prices of a bundled family the import does not list goes through that family
      expect(c.lookup('openai', 'gpt-x-mini-2026-03-01')).to.include({ model: 'gpt-x-mini', origin: 'bundled' });
      // pricing.models replaces every rate: the kept one goes, and is no longer listed
      const overridden = PriceCatalog.fromConfig(
        { models: [{ provider: 'openai', model: 'gpt-c', input: '2', output: '7' }] },
        { bundled, imported: source },
      );
      expect(overridden.lookup('openai', 'gpt-c')).to.not.have.property('cache_read');
      expect(overridden.keptBundledRates()).to.deep.equal([]);
    });

    it('provider module prices, pricing.litellm_file and pricing.models all win over it', () => {
      const provider = withImport({}, [{ provider: 'openai', model: 'gpt-new', input: '7' }]);
      expect(provider.lookup('openai', 'gpt-new')).to.include({
        input: '7',
        origin: 'provider',
        source_note: "prices from the provider module (the imported catalog's entry replaced)",
      });
      const override = withImport({ models: [{ provider: 'openai', model: 'gpt-new', input: '4' }] });
      expect(override.lookup('openai', 'gpt-new')).to.include({ input: '4', origin: 'override' });
      const dir = mkdtempSync(join(tmpdir(), 'tollgate-catalog-'));
      try {
        writeFileSync(
          join(dir, 'prices.json'),
          JSON.stringify({ 'gpt-new': { litellm_provider: 'openai', input_cost_per_token: 6e-6 } }),
        );
        const litellm = PriceCatalog.fromConfig(
          { litellm_file: 'prices.json' },
          { baseDir: dir, bundled: FILE, imported: IMPORT },
        );
        expect(litellm.lookup('openai', 'gpt-new')).to.include({ input: '6', origin: 'litellm' });
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    });

    it('keeps the bundled corrections while the import holds the rates they replace, and the batch tiers it lacks', () => {
      // LiteLLM's own entries: gpt-4o-mini-tts at the snapshot's wrong text rate, grok-4 without a cache rate,
      // claude-haiku-4-5 without batch rates (pricing/price-corrections.json corrects all three).
      const litellm = imported([
        { provider: 'openai', model: 'gpt-4o-mini-tts', kind: 'audio', input: '2.5', output_audio: '12' },
        { provider: 'xai', model: 'grok-4', kind: 'chat', input: '3', output: '15' },
        { provider: 'anthropic', model: 'claude-haiku-4-5', kind: 'chat', input: '1', output: '5', cache_read: '0.1' },
      ]);
      const c = PriceCatalog.fromConfig({}, { imported: litellm });
      expect(c.lookup('openai', 'gpt-4o-mini-tts')).to.include({ input: '0.6', origin: 'imported' });
      expect(c.lookup('xai', 'grok-4')).to.include({ cache_read: '0.75', origin: 'imported' });
      expect(c.lookup('anthropic', 'claude-haiku-4-5')!.service_tiers?.batch).to.include({
        input: '0.5',
        output: '2.5',
      });
      // A source that changed the rate wins over the correction.
      const changed = imported([{ provider: 'openai', model: 'gpt-4o-mini-tts', kind: 'audio', input: '0.7' }]);
      expect(PriceCatalog.fromConfig({}, { imported: changed }).lookup('openai', 'gpt-4o-mini-tts')).to.include({
        input: '0.7',
      });
    });
  });

  describe('discounts', () => {
    it('take the fraction off every price and fee of the billing provider, exactly', () => {
      const c = catalog({ discounts: { gemini: '0.2', perplexity: 0.5, xai: '0.1' } });
      const { created: _c, ...gem } = c.lookup('gemini', 'gem-pro')!;
      expect(gem).to.deep.equal({
        provider: 'gemini',
        model: 'gem-pro',
        kind: 'chat',
        input: '1',
        output: '8',
        search_query_fee: '0.028',
        long_context: [{ above_input_tokens: 200_000, input: '2', output: '12' }],
        service_tiers: { batch: { input: '0.5', output: '4' } },
        id: 'gem-pro',
        origin: 'bundled',
        discount: '0.2',
      });
      expect(c.lookup('perplexity', 'sonar-x')).to.include({ input: '0.5', output: '0.5', discount: '0.5' });
      expect(c.lookup('perplexity', 'sonar-x')?.request_fee).to.deep.equal({ low: '0.0025', high: '0.006' });
      expect(c.lookup('xai', 'grok-z')).to.include({ request_fee: '0.0225', input: '2.7' });
      expect(c.lookup('openai', 'gpt-x')).to.include({ input: '2' });
      expect(c.lookup('openai', 'gpt-x')).to.not.have.property('discount');
    });

    it("a model's own discount wins over its provider's; the provider's other models keep the provider's", () => {
      const c = catalog({ discounts: { openai: '0.5', 'OpenAI/gpt-x': '0.24' } });
      // gpt-x lists at 2 / 8: 0.76 of it, exactly.
      expect(c.lookup('openai', 'gpt-x')).to.include({ input: '1.52', output: '6.08', discount: '0.24' });
      expect(c.lookup('openai', 'gpt-x-mini')).to.include({ input: '0.25', output: '0.5', discount: '0.5' });
      // Without a provider-wide one, the other models stay at list price.
      const only = catalog({ discounts: { 'openai/gpt-x': '0.24' } });
      expect(only.lookup('openai', 'gpt-x')).to.include({ input: '1.52', discount: '0.24' });
      expect(only.lookup('openai', 'gpt-x-mini')).to.include({ input: '0.5' }).and.not.have.property('discount');
    });

    it("on an OpenRouter fallback, OpenRouter's discount applies, not the vendor's", () => {
      const c = catalog({ discounts: { openrouter: '0.25', openai: '0.5' } });
      expect(c.lookup('openrouter', 'openai/gpt-x')).to.include({ input: '1.5', output: '6', discount: '0.25' });
      expect(c.lookup('openai', 'gpt-x')).to.include({ input: '1', output: '4', discount: '0.5' });
    });
  });

  describe('price version', () => {
    it('is the bundled version until something is overridden, then carries a hash of the overrides', () => {
      expect(catalog().version).to.equal('2026-01-01.1');
      expect(catalog().bundledVersion).to.equal('2026-01-01.1');
      const v = catalog({ models: [{ provider: 'openai', model: 'gpt-x', input: 1, output: 2 }] }).version;
      expect(v).to.match(/^2026-01-01\.1\+[0-9a-f]{12}$/);
      expect(catalog({ discounts: { openai: '0.1' } }).version).to.match(/^2026-01-01\.1\+[0-9a-f]{12}$/);
      expect(catalog({ discounts: { openai: '0.1' } }).version).to.not.equal(v);
    });

    it('is the first 12 hex digits of the SHA-256 of the overrides as JSON with sorted keys', () => {
      // {discounts, litellm, models}: keys sorted at every level
      const canonical =
        '{"discounts":{"openai":"0.1"},"litellm":[],"models":[{"input":"1","model":"gpt-x","provider":"openai"}]}';
      const expected = createHash('sha256').update(canonical).digest('hex').slice(0, 12);
      expect(
        catalog({ discounts: { openai: 0.1 }, models: [{ provider: 'openai', model: 'gpt-x', input: 1 }] }).version,
      ).to.equal(`2026-01-01.1+${expected}`);
    });

    it('does not depend on the order keys were written in, and changes with any value', () => {
      const v = catalog({
        models: [
          {
            provider: 'openai',
            model: 'gpt-x',
            input: 1,
            output: 2,
            long_context: [{ above_input_tokens: 10, input: 3 }],
          },
        ],
      }).version;
      expect(
        catalog({
          models: [
            {
              output: 2,
              long_context: [{ input: 3, above_input_tokens: 10 }],
              input: 1,
              model: 'gpt-x',
              provider: 'openai',
            },
          ],
        }).version,
      ).to.equal(v);
      expect(
        catalog({
          models: [
            {
              provider: 'openai',
              model: 'gpt-x',
              input: 1,
              output: 2,
              long_context: [{ above_input_tokens: 10, input: 4 }],
            },
          ],
        }).version,
      ).to.not.equal(v);
      expect(
        catalog({
          models: [
            {
              provider: 'openai',
              model: 'gpt-x',
              input: 1,
              output: 2.5,
              long_context: [{ above_input_tokens: 10, input: 3 }],
            },
          ],
        }).version,
      ).to.not.equal(v);
    });
  });
});
