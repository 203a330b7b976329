import { expect } from 'chai';
import { readFileSync } from 'node:fs';
import { bundledCatalog } from '../../pricing/bundled-catalog';
import { mulDecimal } from '../../pricing/decimal';
import { PRICE_FIELDS } from '../../pricing/entry-prices';
import { bundledMediaPrices } from '../../pricing/media-prices';
import type { CatalogModel } from '../../pricing/model-price';
import { bundledCorrections, type PriceCorrection } from '../../pricing/price-corrections';
import { buildCatalog, SOURCE_SNAPSHOT } from '../../scripts/build-price-catalog';

const TIERS = ['batch', 'flex', 'priority'] as const;

const show = (v: unknown): string => (v === undefined ? 'none' : typeof v === 'string' ? v : JSON.stringify(v));

/** The rates of an entry as the sources are compared field by field: each service tier on its own. */
function rateFields(m: CatalogModel | undefined): Map<string, unknown> {
  const out = new Map<string, unknown>();
  for (const f of PRICE_FIELDS) if (f !== 'service_tiers') out.set(f, m?.[f]);
  for (const t of TIERS) out.set(`service_tiers.${t}`, m?.service_tiers?.[t]);
  return out;
}

/** The field a correction sets, as rateFields names it, and the value it sets there. */
const corrected = (c: PriceCorrection): [string, unknown] =>
  'tier' in c ? [`service_tiers.${c.tier}`, c.rates] : [c.field, c.price];

describe('the bundled catalog against its sources', () => {
  const snapshot = new Map<string, CatalogModel>(
    (JSON.parse(buildCatalog(readFileSync(SOURCE_SNAPSHOT, 'utf8')).text).models as CatalogModel[]).map((m) => [
      `${m.provider}/${m.model}`,
      m,
    ]),
  );
  const media = new Map(bundledMediaPrices().map((p) => [`${p.provider}/${p.model}`, p]));
  const corrections = bundledCorrections();

  /** Every bundled rate that is not the LiteLLM snapshot's, with where it comes from. */
  function differences(): { id: string; field: string; from: string; to: string; source: string }[] {
    const out: { id: string; field: string; from: string; to: string; source: string }[] = [];
    for (const m of bundledCatalog().models) {
      const id = `${m.provider}/${m.model}`;
      const was = rateFields(snapshot.get(id));
      for (const [field, now] of rateFields(m)) {
        if (show(was.get(field)) === show(now)) continue;
        const fix = corrections.find(
          (c) => `${c.provider}/${c.model}` === id && show(corrected(c)) === show([field, now]),
        );
        const fromMedia = media.get(id);
        const source = fix
          ? fix.source
          : fromMedia && show((fromMedia as Record<string, unknown>)[field]) === show(now)
            ? `pricing/media-prices.json: ${fromMedia.source}`
            : 'NO SOURCE';
        out.push({ id, field, from: show(was.get(field)), to: show(now), source });
      }
    }
    return out;
  }

  it('every bundled rate that differs from the snapshot names its source', () => {
    const unsourced = differences().filter((d) => d.source === 'NO SOURCE');
    expect(unsourced, 'rates that differ from pricing/source/prices.yaml without a source').to.deep.equal([]);
  });

  it('each correction replaces the value the snapshot has, and names where its price was read', () => {
    for (const c of corrections) {
      const [field] = corrected(c);
      const was = rateFields(snapshot.get(`${c.provider}/${c.model}`)).get(field);
      expect(show(was ?? null), `${c.provider}/${c.model} ${field}: the snapshot value the correction names`).to.equal(
        show(c.snapshot),
      );
      expect(c.source, 'a correction names where its price was read').to.match(/\w+\.\w+/);
    }
  });

  it('the corrected flat rates are these', () => {
    const flat = differences()
      .filter((d) => !d.source.startsWith('pricing/media-prices.json') && !d.field.startsWith('service_tiers.'))
      .map(({ id, field, from, to }) => `${id} ${field}: ${from} -> ${to}`);
    expect(flat).to.deep.equal(['openai/gpt-4o-mini-tts input: 2.5 -> 0.6', 'xai/grok-4 cache_read: none -> 0.75']);
  });

  it("Anthropic's batch rates are its standard ones halved, every rate of every model; it publishes no priority rate", () => {
    const claude = bundledCatalog().models.filter((m) => m.provider === 'anthropic');
    expect(claude.length).to.be.greaterThan(10);
    for (const m of claude) {
      const batch = m.service_tiers?.batch;
      expect(batch, `${m.model} batch rates`).to.not.equal(undefined);
      for (const [bucket, rate] of Object.entries(batch!)) {
        const standard = m[bucket as keyof typeof batch];
        expect(rate, `${m.model} batch ${bucket}`).to.equal(mulDecimal(standard!, '0.5'));
      }
      // Every standard rate has its batch half, except claude-3-haiku's disputed 1-hour write (docs/pricing.md).
      const missing = (['input', 'output', 'cache_read', 'cache_write', 'cache_write_1h'] as const).filter(
        (b) => m[b] !== undefined && batch![b] === undefined,
      );
      expect(missing, m.model).to.deep.equal(m.model === 'claude-3-haiku-20240307' ? ['cache_write_1h'] : []);
      expect(m.service_tiers?.priority, `${m.model}: Priority Tier is billed by commitment`).to.equal(undefined);
    }
    const tiers = differences().filter((d) => d.field.startsWith('service_tiers.'));
    expect(tiers.map((d) => `${d.id} ${d.field}`)).to.deep.equal(
      claude.map((m) => `anthropic/${m.model} service_tiers.batch`),
    );
  });

  it('the audio and image prices merged in only add the rates the snapshot build leaves out (its skipped fields)', () => {
    const fromMedia = differences().filter((x) => x.source.startsWith('pricing/media-prices.json'));
    expect(fromMedia.length).to.be.greaterThan(5);
    for (const d of fromMedia) expect(d.from, `${d.id} ${d.field}`).to.equal('none');
  });
});
