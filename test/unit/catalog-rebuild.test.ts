import { expect } from 'chai';
import { readFileSync } from 'node:fs';
import { BUNDLED_CATALOG, buildCatalog, SOURCE_SNAPSHOT } from '../../scripts/build-price-catalog';

describe('bundled catalog rebuild', () => {
  it('pricing/catalog.json is exactly what scripts/build-price-catalog.ts builds from pricing/source/prices.yaml', () => {
    const built = buildCatalog(readFileSync(SOURCE_SNAPSHOT, 'utf8'));
    const committed = readFileSync(BUNDLED_CATALOG, 'utf8');
    // Compared as objects first, so a difference names the entry; then byte for byte.
    expect(JSON.parse(built.text)).to.deep.equal(JSON.parse(committed));
    expect(built.text).to.equal(committed);
  });

  it('refuses a snapshot whose model count disagrees with its header, or a key it cannot place', () => {
    const yaml = readFileSync(SOURCE_SNAPSHOT, 'utf8');
    expect(() => buildCatalog(yaml.replace('model_count: 120', 'model_count: 121'))).to.throw(
      'model_count says 121, found 120',
    );
    expect(() => buildCatalog(yaml.replace('  model: gpt-4\n', '  model: gpt-4\n  input_per_token: 1\n'))).to.throw(
      'openai/gpt-4: unhandled key input_per_token',
    );
  });
});
