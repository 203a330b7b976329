import { expect } from 'chai';
import { spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { createPluginHarness } from 'tollgate/testing';
import { PROJECT_ROOT } from '../helpers/fixtures';
import { bootError } from './helpers';

const CLI = resolve(PROJECT_ROOT, 'dist/cli/index.js');

/** Runs the real CLI in `dir` (its gateway.config.yaml) without GATEWAY_KEY, so a start that got far would create a key. */
function tollgate(dir: string, ...args: string[]): { status: number | null; stdout: string; stderr: string } {
  const env = { ...process.env };
  delete env.GATEWAY_KEY;
  const r = spawnSync(process.execPath, [CLI, ...args, '--config', join(dir, 'gateway.config.yaml')], {
    env,
    timeout: 20_000,
  });
  return { status: r.status, stdout: r.stdout.toString(), stderr: r.stderr.toString() };
}

function configDir(yaml: string): string {
  const dir = mkdtempSync(join(tmpdir(), 'tollgate-start-checks-'));
  writeFileSync(join(dir, 'gateway.config.yaml'), yaml);
  return dir;
}

describe('framework: start refuses what check-config refuses, before it touches the store', () => {
  const yaml = `
server: { host: 127.0.0.1, port: 0 }
storage: { url: "sqlite:./data/tollgate.db" }
plugins:
  - use: auth
  - use: usage-recorder
    options: { batch_size: 0 }
`;
  const problem = 'plugins[1] (usage-recorder): options.batch_size: Too small: expected number to be >=1';

  for (const workers of ['1', '2']) {
    it(`bad plugin options: start --workers ${workers} exits 2 (the config's fault) naming them; no store file, no key created`, () => {
      const dir = configDir(yaml);
      const r = tollgate(dir, 'start', '--workers', workers);
      expect(r.status).to.equal(2);
      expect(r.stderr).to.equal(`tollgate: cannot start: ${problem}\n`);
      expect(r.stdout).to.equal('');
      expect(existsSync(join(dir, 'data')), 'the store folder').to.equal(false);
      expect(readdirSync(dir)).to.deep.equal(['gateway.config.yaml']);
    });
  }

  it('check-config gives the same message (exit 2)', () => {
    const dir = configDir(yaml);
    const r = tollgate(dir, 'check-config');
    expect(r.status).to.equal(2);
    expect(r.stderr).to.equal(`tollgate: ${join(dir, 'gateway.config.yaml')}: ${problem}\n`);
  });
});

/**
 * A plugin package that installed Tollgate as a dependency of its own: node_modules/tollgate-plugin-own-copy with
 * node_modules/tollgate inside it, a copy of this build (its dependencies shared through a link).
 */
function pluginWithOwnCopy(): { dir: string; copy: string } {
  const dir = mkdtempSync(join(tmpdir(), 'tollgate-own-copy-'));
  const pkg = join(dir, 'node_modules/tollgate-plugin-own-copy');
  const copy = join(pkg, 'node_modules/tollgate');
  mkdirSync(copy, { recursive: true });
  cpSync(join(PROJECT_ROOT, 'package.json'), join(copy, 'package.json'));
  for (const room of [
    'api',
    'core',
    'intake',
    'contracts',
    'plugin-kit',
    'config',
    'pricing',
    'providers',
    'records',
    'services',
  ]) {
    cpSync(join(PROJECT_ROOT, 'dist', room), join(copy, 'dist', room), {
      recursive: true,
      filter: (f) => !f.endsWith('.map'),
    });
  }
  symlinkSync(join(PROJECT_ROOT, 'node_modules'), join(copy, 'node_modules'), 'dir');
  writeFileSync(join(pkg, 'package.json'), JSON.stringify({ name: 'tollgate-plugin-own-copy', main: 'index.js' }));
  writeFileSync(
    join(pkg, 'index.js'),
    [
      "const { definePlugin, GatewayError } = require('tollgate');",
      "module.exports = definePlugin({ name: 'own-copy', create: () => ({ name: 'own-copy', onRequest() { throw new GatewayError('policy_denied', 'no'); } }) });",
    ].join('\n'),
  );
  writeFileSync(
    join(dir, 'gateway.config.yaml'),
    'storage: { url: "sqlite::memory:" }\nplugins:\n  - use: auth\n  - use: tollgate-plugin-own-copy\n',
  );
  return { dir, copy };
}

describe('framework: a plugin with its own copy of Tollgate is refused, naming both copies', () => {
  let dir: string;
  let copy: string;
  before(() => ({ dir, copy } = pluginWithOwnCopy()));

  const expected = (where: string) =>
    `${where}: it uses its own copy of Tollgate (${copy}), not the gateway's (${PROJECT_ROOT}): a GatewayError it throws would not be ` +
    'recognised, and every refusal would become 500 plugin_error. Make tollgate a peerDependency of the plugin and remove the copy it installed.';

  it('at start-up', async () => {
    const message = await bootError('plugins:\n  - use: auth\n  - use: tollgate-plugin-own-copy\n', dir);
    expect(message).to.equal(expected('plugins[1]: "tollgate-plugin-own-copy"'));
  });

  it('by check-config, with the same message', () => {
    const r = tollgate(dir, 'check-config');
    expect(r.status).to.equal(2);
    expect(r.stderr).to.equal(
      `tollgate: ${join(dir, 'gateway.config.yaml')}: ${expected('plugins[1]: "tollgate-plugin-own-copy"')}\n`,
    );
  });

  it('by tollgate/testing too, for a definition the other copy made', async () => {
    const other = require(join(copy, 'dist/api/index.js')) as typeof import('tollgate');
    const definition = other.definePlugin({ name: 'made-elsewhere', create: () => ({ name: 'made-elsewhere' }) });
    let message = '';
    await createPluginHarness(definition).catch((e: Error) => (message = e.message));
    expect(message).to.equal(expected('plugins[0] (made-elsewhere)'));
  });
});
