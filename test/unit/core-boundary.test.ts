import { expect } from 'chai';
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { PROJECT_ROOT } from '../helpers/fixtures';

/** The rooms core/ (the data plane) may never reach into: wiring, plugins, storage and the control plane. */
const FORBIDDEN = ['plugins', 'storage', 'admin', 'cli', 'runtime', 'testing'];

function sourcesUnder(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const path = join(dir, e.name);
    if (e.isDirectory()) return sourcesUnder(path);
    return e.name.endsWith('.ts') ? [path] : [];
  });
}

/** Every module specifier of a file: static imports and exports, import() and require(). */
function specifiersOf(source: string): string[] {
  const found: string[] = [];
  const pattern = /(?:\bfrom\s*|\bimport\s*\(\s*|\brequire\s*\(\s*|^\s*import\s+)(['"])([^'"]+)\1/gm;
  for (let m = pattern.exec(source); m; m = pattern.exec(source)) found.push(m[2]);
  return found;
}

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
      for (const spec of specifiersOf(readFileSync(file, 'utf8'))) {
        if (!spec.startsWith('.')) continue;
        const room = relative(PROJECT_ROOT, resolve(dirname(file), spec)).split(/[\\/]/)[0];
        if (FORBIDDEN.includes(room)) offences.push(`${relative(PROJECT_ROOT, file)} imports ${spec}`);
      }
    }
    expect(offences).to.deep.equal([]);
  });
});
