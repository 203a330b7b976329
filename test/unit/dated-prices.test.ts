/** Effective-dated prices (pricing/dated-prices.ts): the price in force at a time, and the version it records. */
import { expect } from 'chai';
import { PriceCatalog } from '../../pricing/catalog';

const T = (iso: string) => Date.parse(iso);

describe('effective-dated prices', () => {
  const catalog = PriceCatalog.fromConfig({
    models: [
      { provider: 'openai', model: 'gpt-4o', input: '2', output: '8', effective_from: '2025-07-30' },
      {
        provider: 'openai',
        model: 'gpt-4o',
        input: '1',
        output: '4',
        effective_from: '2025-08-01',
        effective_to: '2025-09-01T00:00:00Z',
      },
      {
        provider: 'acme',
        model: 'dated-only',
        input: '1',
        output: '1',
        effective_from: '2025-01-01',
        effective_to: '2025-02-01',
      },
    ],
  });

  it('prices a time with the window holding it, the latest start first, else the undated price', () => {
    expect(catalog.lookupAt('openai', 'gpt-4o', T('2025-07-29T23:59:59Z'))?.input).to.equal('2.5');
    expect(catalog.lookupAt('openai', 'gpt-4o', T('2025-07-30T00:00:00Z'))?.input).to.equal('2');
    expect(catalog.lookupAt('openai', 'gpt-4o-2024-08-06', T('2025-08-15T00:00:00Z'))?.input).to.equal('1');
    expect(catalog.lookupAt('openai', 'gpt-4o', T('2025-09-01T00:00:00Z'))?.input).to.equal('2');
  });

  it('a model with dated prices only is unpriced outside them', () => {
    expect(catalog.lookupAt('acme', 'dated-only', T('2025-01-15T00:00:00Z'))?.output).to.equal('1');
    expect(catalog.lookupAt('acme', 'dated-only', T('2025-02-01T00:00:00Z'))).to.equal(undefined);
  });

  it('records the dated price it used in the price version', () => {
    const price = catalog.lookupAt('openai', 'gpt-4o', T('2025-08-15T00:00:00Z'))!;
    expect(catalog.versionOf(price)).to.equal(`${catalog.version}@2025-08-01T00:00:00.000Z..2025-09-01T00:00:00.000Z`);
    expect(catalog.versionOf(catalog.lookupAt('openai', 'gpt-4o', T('2025-01-01T00:00:00Z'))!)).to.equal(
      catalog.version,
    );
  });

  it('refuses a window that ends before it starts', () => {
    expect(() =>
      PriceCatalog.fromConfig({
        models: [
          {
            provider: 'openai',
            model: 'gpt-4o',
            input: '1',
            output: '1',
            effective_from: '2025-02-01',
            effective_to: '2025-01-01',
          },
        ],
      }),
    ).to.throw(/effective_to must be after effective_from/);
  });
});
