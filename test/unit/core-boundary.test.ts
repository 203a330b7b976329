import { expect } from 'chai';
import { readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { PROJECT_ROOT } from '../helpers/fixtures';
import { relativeImportsOf, sourcesUnder, specifiersOf } from '../helpers/imports';

/** The rooms core/ (the data plane) may never reach into: wiring, plugins, storage and the control plane. */
const FORBIDDEN = ['plugins', 'storage', 'admin', 'cli', 'runtime', 'testing'];

describe('core/ imports nothing from the rooms around it', () => {
  const coreDir = join(PROJECT_ROOT, 'core');
  const files = sourcesUnder(coreDir);

  it('finds the core sources and their imports', () => {
    expect(files.length).to.be.greaterThan(20);
    expect(specifiersOf(readFileSync(join(coreDir, 'proxy.ts'), 'utf8'))).to.include('./errors');
  });

  it(`no core module imports from ${FORBIDDEN.join('/, ')}/`, () => {
    const offences: string[] = [];
    for (const file of files) {
      for (const { spec, target } of relativeImportsOf(file)) {
        if (FORBIDDEN.includes(target.split('/')[0])) offences.push(`${relative(PROJECT_ROOT, file)} imports ${spec}`);
      }
    }
    expect(offences).to.deep.equal([]);
  });
});
