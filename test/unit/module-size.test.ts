import { expect } from 'chai';
import { readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { PROJECT_ROOT } from '../helpers/fixtures';
import { sourcesUnder } from '../helpers/imports';

/** A production module a reader can take in whole; a longer one is split along its seams. */
const MAX_MODULE_LINES = 400;
/** The data plane stays small: what is not the request flow lives in another room. */
const MAX_CORE_LINES = 2_500;
/** Folders that are not production code: tests, benchmarks, scripts, and the examples (documentation). */
const NOT_PRODUCTION = new Set(['test', 'bench', 'scripts', 'examples']);
/** Modules still over the limit, each to be split; the list only shrinks. */
const STILL_OVER: readonly string[] = ['admin/dashboard/web/usage.ts'];

const linesOf = (file: string): number => readFileSync(file, 'utf8').split('\n').length - 1;

function productionModules(): string[] {
  const { include } = JSON.parse(readFileSync(join(PROJECT_ROOT, 'tsconfig.json'), 'utf8')) as { include: string[] };
  return include
    .filter((room) => !NOT_PRODUCTION.has(room) && statSync(join(PROJECT_ROOT, room)).isDirectory())
    .flatMap((room) => sourcesUnder(join(PROJECT_ROOT, room)))
    .map((file) => relative(PROJECT_ROOT, file).split(/[\\/]/).join('/'));
}

describe('module sizes', () => {
  const modules = productionModules();

  it('reads every production room, the dashboard included', () => {
    expect(modules).to.include.members(['core/proxy.ts', 'admin/dashboard/web/main.ts', 'runtime/gateway.ts']);
  });

  it(`no production module is over ${MAX_MODULE_LINES} lines`, () => {
    const over = modules
      .filter((m) => !STILL_OVER.includes(m) && linesOf(join(PROJECT_ROOT, m)) > MAX_MODULE_LINES)
      .map((m) => `${m}: ${linesOf(join(PROJECT_ROOT, m))} lines`);
    expect(over).to.deep.equal([]);
  });

  it(`core/ is under ${MAX_CORE_LINES} lines`, () => {
    const core = modules.filter((m) => m.startsWith('core/'));
    const total = core.reduce((sum, m) => sum + linesOf(join(PROJECT_ROOT, m)), 0);
    expect(core.length).to.be.greaterThan(20);
    expect(total).to.be.below(MAX_CORE_LINES);
  });
});
