import { expect } from 'chai';
import { join, relative } from 'node:path';
import { PROJECT_ROOT } from '../helpers/fixtures';
import { relativeImportsOf, sourcesUnder } from '../helpers/imports';

/** The public entry point, as a relative import names it ("../../api" or "../../api/index"). */
const PUBLIC_ENTRY = ['api', 'api/index'];

/**
 * The folder a plugin source may import from besides the public entry: its own plugin's folder (plugins/auth/...
 * -> plugins/auth); plugins/index.ts, the list of built-ins, may import the plugin folders.
 */
function ownFolder(file: string): string {
  const parts = relative(PROJECT_ROOT, file).split(/[\\/]/);
  return parts.length > 2 ? parts.slice(0, 2).join('/') : 'plugins';
}

describe('built-in plugins use only the public contract', () => {
  const files = sourcesUnder(join(PROJECT_ROOT, 'plugins'));

  it('finds every built-in plugin', () => {
    const folders = new Set(files.map(ownFolder));
    for (const name of [
      'auth',
      'header-strip',
      'attribution',
      'required-tags',
      'max-tokens',
      'rate-limit',
      'concurrency',
      'budget',
      'usage-recorder',
    ]) {
      expect(folders, name).to.include(`plugins/${name}`);
    }
  });

  it('no plugin source imports anything but the public entry (api/index.ts), its own folder and packages', () => {
    const offences: string[] = [];
    for (const file of files) {
      const own = ownFolder(file);
      for (const { spec, target } of relativeImportsOf(file)) {
        if (PUBLIC_ENTRY.includes(target) || target === own || target.startsWith(`${own}/`)) continue;
        offences.push(`${relative(PROJECT_ROOT, file)} imports ${spec}`);
      }
    }
    expect(offences).to.deep.equal([]);
  });
});
