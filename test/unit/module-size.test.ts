import { expect } from 'chai';
import { readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { PROJECT_ROOT } from '../helpers/fixtures';
import { sourcesUnder } from '../helpers/imports';

/** The data plane stays small: what is not the request flow lives in another room. */
const MAX_CORE_LINES = 2_500;
/** Folders that are not production code: tests, benchmarks, scripts, and the examples (documentation). */
const NOT_PRODUCTION = new Set(['test', 'bench', 'scripts', 'examples']);

const linesOf = (file: string): number => readFileSync(file, 'utf8').split('\n').length - 1;

function productionModules(): string[] {
  const { include } = JSON.parse(readFileSync(join(PROJECT_ROOT, 'tsconfig.json'), 'utf8')) as { include: string[] };
  return include
    .filter((room) => !NOT_PRODUCTION.has(room) && statSync(join(PROJECT_ROOT, room)).isDirectory())
    .flatMap((room) => sourcesUnder(join(PROJECT_ROOT, room)))
    .map((file) => relative(PROJECT_ROOT, file).split(/[\\/]/).join('/'));
}

// Each module's own limit (400 lines) is ESLint's max-lines rule (eslint.config.mjs); this holds core/ as a whole.
describe('module sizes', () => {
  const modules = productionModules();

  it('reads every production room, the dashboard included', () => {
    expect(modules).to.include.members(['core/proxy.ts', 'admin/dashboard/web/main.ts', 'runtime/gateway.ts']);
  });

  it(`core/ is under ${MAX_CORE_LINES} lines`, () => {
    const core = modules.filter((m) => m.startsWith('core/'));
    const total = core.reduce((sum, m) => sum + linesOf(join(PROJECT_ROOT, m)), 0);
    expect(core.length).to.be.greaterThan(20);
    expect(total).to.be.below(MAX_CORE_LINES);
  });
});
