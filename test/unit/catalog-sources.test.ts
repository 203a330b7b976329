import { expect } from 'chai';
import { readFileSync } from 'node:fs';
import { bundledCatalog } from '../../pricing/bundled-catalog';
import { bundledMediaPrices } from '../../pricing/media-prices';
import { BUCKETS, type CatalogModel } from '../../pricing/model-price';
import { bundledCorrections } from '../../pricing/price-corrections';
import { buildCatalog, SOURCE_SNAPSHOT } from '../../scripts/build-price-catalog';

/** Every field of an entry that bills a request, as the catalog holds it. */
const RATE_FIELDS = [
  ...BUCKETS,
  'request_fee',
  'search_query_fee',
  'long_context',
  'service_tiers',
  'per_second',
  'per_character',
  'per_image',
] as const;

const show = (v: unknown): string => (v === undefined ? 'none' : typeof v === 'string' ? v : JSON.stringify(v));

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
      const s = snapshot.get(id);
      for (const field of RATE_FIELDS) {
        const was = s?.[field];
        const now = m[field];
        if (show(was) === show(now)) continue;
        const fix = corrections.find((c) => `${c.provider}/${c.model}` === id && c.field === field);
        const fromMedia = media.get(id);
        const source = fix
          ? fix.source
          : fromMedia && show((fromMedia as Record<string, unknown>)[field]) === show(now)
            ? `pricing/media-prices.json: ${fromMedia.source}`
            : 'NO SOURCE';
        out.push({ id, field, from: show(was), to: show(now), source });
      }
    }
    return out;
  }

  it('every bundled rate that differs from the snapshot names its source', () => {
    const unsourced = differences().filter((d) => d.source === 'NO SOURCE');
    expect(unsourced, 'rates that differ from pricing/source/prices.yaml without a source').to.deep.equal([]);
  });

  it('the deliberate corrections are these, each replacing the value the snapshot has', () => {
    const corrected = differences()
      .filter((d) => !d.source.startsWith('pricing/media-prices.json'))
      .map(({ id, field, from, to }) => `${id} ${field}: ${from} -> ${to}`);
    expect(corrected).to.deep.equal([
      'openai/gpt-4o-mini-tts input: 2.5 -> 0.6',
      'xai/grok-4 cache_read: none -> 0.75',
    ]);
    for (const c of corrections) {
      const was = snapshot.get(`${c.provider}/${c.model}`)?.[c.field];
      expect(was ?? null, `${c.provider}/${c.model} ${c.field}: the snapshot value the correction names`).to.equal(
        c.snapshot,
      );
      expect(c.source, 'a correction names where its price was read').to.match(/\w+\.\w+/);
    }
  });

  it('the audio and image prices merged in only add the rates the snapshot build leaves out (its skipped fields)', () => {
    const media = differences().filter((x) => x.source.startsWith('pricing/media-prices.json'));
    expect(media.length).to.be.greaterThan(5);
    for (const d of media) expect(d.from, `${d.id} ${d.field}`).to.equal('none');
  });
});
