import { expect } from 'chai';
import { readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { PROJECT_ROOT } from '../helpers/fixtures';
import { relativeImportsOf, sourcesUnder, specifiersOf } from '../helpers/imports';

/** The rooms people most often reach for from the data plane; core/ may import none of them, nor any other room. */
const NAMED = ['config', 'pricing', 'providers', 'intake', 'contracts', 'plugin-kit', 'services', 'plugins', 'storage'];

describe('core/ imports nothing from outside core/', () => {
  const coreDir = join(PROJECT_ROOT, 'core');
  const files = sourcesUnder(coreDir);

  it('finds the core sources and their imports', () => {
    expect(files.length).to.be.greaterThan(20);
    expect(specifiersOf(readFileSync(join(coreDir, 'proxy.ts'), 'utf8'))).to.include('./errors');
  });

  it(`no core module imports from another room (${NAMED.join('/, ')}/ ...), types included`, () => {
    const offences: string[] = [];
    for (const file of files) {
      for (const { spec, target } of relativeImportsOf(file)) {
        if (target.split('/')[0] !== 'core') offences.push(`${relative(PROJECT_ROOT, file)} imports ${spec}`);
      }
    }
    expect(offences).to.deep.equal([]);
  });
});
