import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { expect } from 'chai';
import { ConfigError, loadConfigFile, parseConfig } from '../../config/load';
import { validatePluginOptions } from '../../runtime/loading/plugin-instance';
import type { PluginDefinition } from '../../contracts/plugin-definition';
import { loadProviders } from '../../runtime/loading/deployed-providers';
import { attribution } from '../../plugins/attribution';
import { usageRecorder } from '../../plugins/usage-recorder';
import { PROJECT_ROOT } from '../helpers/fixtures';

const expectConfigError = (yaml: string, pattern: RegExp, env: NodeJS.ProcessEnv = {}) => {
  expect(() => parseConfig(yaml, env)).to.throw(ConfigError, pattern);
};

describe('config loading', () => {
  it('applies defaults to an empty file', () => {
    const c = parseConfig('');
    expect(c.server).to.include({ host: '127.0.0.1', port: 8080 });
    expect(c.storage.url).to.equal('sqlite:./data/tollgate.db');
    expect(c.plugins.map((p) => p.use)).to.deep.equal([
      'auth',
      'header-strip',
      'attribution',
      'required-tags',
      'max-tokens',
      'concurrency',
      'rate-limit',
      'budget',
      'usage-recorder',
    ]);
  });

  it('metrics.tag_values names only keys of metrics.tag_keys', () => {
    expectConfigError(
      'metrics: { tag_keys: [feature], tag_values: { team: [search] } }',
      /metrics\.tag_values\.team: "team" is not one of metrics\.tag_keys/,
    );
    const c = parseConfig('metrics: { tag_keys: [feature], tag_values: { feature: [search] } }');
    expect(c.metrics).to.deep.include({ tag_values: { feature: ['search'] }, tag_values_refresh_ms: 60_000 });
  });

  it('interpolates ${VAR} and ${VAR:-default} in values', () => {
    const c = parseConfig('server: { host: "${HOST:-0.0.0.0}" }\nstorage: { url: "${DB}" }', { DB: 'postgres://db/x' });
    expect(c.server.host).to.equal('0.0.0.0');
    expect(c.storage.url).to.equal('postgres://db/x');
  });

  it('warns about a gateway key written in the file as plain text, not about ${ENV} or sha256 keys', () => {
    const dir = mkdtempSync(join(tmpdir(), 'tollgate-cfg-'));
    const file = join(dir, 'gateway.config.yaml');
    writeFileSync(
      file,
      [
        'workspaces:',
        '  - id: a',
        '    keys:',
        '      - { id: env, key: "${KEY_A}" }',
        '      - { id: hashed, sha256: 5e884898da28047151d0e56f8dc6292773603d0d6aabbdd62a11ef721d1542d8 }',
        '      - { id: plain, key: tg_written_into_the_file_0001 }',
      ].join('\n'),
    );
    const loaded = loadConfigFile(file, { KEY_A: 'tg_from_the_environment_0000000001' });
    expect(loaded.warnings).to.deep.equal([
      'workspaces[0].keys[2].key is written in the config file as plain text: use an ${ENV} reference or its sha256',
    ]);
  });

  it('takes numbers and booleans from ${ENV} references: limits and plugin options', () => {
    const c = parseConfig(
      [
        'workspaces: [{ id: a, limits: { requests_per_minute: "${RPM}", budgets: [{ period: day, usd: "5", alert_at: "${ALERT}" }] } }]',
        'plugins: [{ use: attribution, options: { max_keys: "${MAX_KEYS:-8}" } }, { use: usage-recorder, options: { cost_header: "${COST_HEADER}" } }]',
      ].join('\n'),
      { RPM: '600', ALERT: '0.9', COST_HEADER: 'false' },
    );
    expect(c.workspaces[0].limits.requests_per_minute).to.equal(600);
    expect(c.workspaces[0].limits.budgets[0].alert_at).to.deep.equal([0.9]);
    const option = (use: string) => c.plugins.find((p) => p.use === use)!.options;
    expect(
      validatePluginOptions(attribution as PluginDefinition<unknown>, option('attribution'), 'plugins[0]'),
    ).to.include({ max_keys: 8 });
    expect(
      validatePluginOptions(usageRecorder as PluginDefinition<unknown>, option('usage-recorder'), 'plugins[1]'),
    ).to.include({ cost_header: false });
    expect(() =>
      parseConfig('workspaces: [{ id: a, limits: { requests_per_minute: "${RPM}" } }]', { RPM: 'many' }),
    ).to.throw(ConfigError, /requests_per_minute/);
  });

  it('does not let an env value inject YAML', () => {
    const c = parseConfig('storage: { url: "${DB}" }', { DB: 'x"\nserver: { port: 1 }' });
    expect(c.server.port).to.equal(8080);
    expect(c.storage.url).to.equal('x"\nserver: { port: 1 }');
  });

  it('names the key of an unset variable', () =>
    expectConfigError(
      'workspaces:\n  - id: a\n    keys: [{ id: k, key: "${NOPE}" }]',
      /workspaces\[0\]\.keys\[0\]\.key: environment variable NOPE is not set/,
    ));
  it('names the key and the problem of a wrong type', () =>
    expectConfigError('server: { port: "eighty" }', /server\.port: .*number/i));
  it('names an unknown key', () => expectConfigError('server: { prot: 80 }', /server: unknown key "prot"/));
  it('rejects a bad base_url', () =>
    expectConfigError('providers: { openai: { base_url: "ftp://x" } }', /providers\.openai\.base_url/));
  it('rejects a malformed key hash', () =>
    expectConfigError('workspaces: [{ id: a, keys: [{ id: k, sha256: "abc" }] }]', /sha256/));
  it('reports invalid YAML', () => expectConfigError('server: [', /invalid YAML/));

  it('parses body sizes with units', () => {
    expect(parseConfig('server: { body_limit: 2mb }').server.body_limit).to.equal(2 * 1024 * 1024);
  });

  it('bounds request bodies held in memory at 512 MiB unless told, never below what one JSON body at the body limit takes', () => {
    expect(parseConfig('').server.max_buffered_bytes).to.equal(512 * 1024 * 1024);
    expect(parseConfig('server: { max_buffered_bytes: 1gb }').server.max_buffered_bytes).to.equal(1024 ** 3);
    expect(parseConfig('server: { body_limit: 1mb, max_buffered_bytes: 2mb }').server.max_buffered_bytes).to.equal(
      2 * 1024 * 1024,
    );
    expectConfigError(
      'server: { body_limit: 32mb, max_buffered_bytes: 63mb }',
      /server\.max_buffered_bytes: must be at least twice server\.body_limit \(67108864 bytes\)/,
    );
    expectConfigError('server: { max_buffered_bytes: 0 }', /server\.max_buffered_bytes/);
  });

  it('gives each workspace a quarter of the buffered bytes unless told, as a size or a percentage, never below one JSON body at the limit', () => {
    const server = (yaml: string) => parseConfig(`server: { ${yaml} }`).server;
    expect(server('').workspace_buffered_bytes).to.equal(128 * 1024 * 1024);
    expect(server('').key_buffered_bytes, 'no key share unless set').to.equal(undefined);
    expect(server('max_buffered_bytes: 64mb').workspace_buffered_bytes, 'raised to twice the body limit').to.equal(
      64 * 1024 * 1024,
    );
    expect(server('workspace_buffered_bytes: 50%').workspace_buffered_bytes).to.equal(256 * 1024 * 1024);
    expect(server('key_buffered_bytes: 100mb').key_buffered_bytes).to.equal(100 * 1024 * 1024);
    expectConfigError(
      'server: { key_buffered_bytes: 10% }',
      /server\.key_buffered_bytes: must be at least twice server\.body_limit/,
    );
    expectConfigError('server: { workspace_buffered_bytes: 1gb }', /server\.workspace_buffered_bytes: must be at most/);
    expectConfigError('server: { workspace_buffered_bytes: half }', /server\.workspace_buffered_bytes/);
  });

  it('times request bodies out after 30 s plus a second per 64 KiB received, unless told', () => {
    const server = (yaml: string) => parseConfig(`server: { ${yaml} }`).server;
    expect(server('')).to.include({ body_timeout_ms: 30_000, body_min_rate: 64 * 1024 });
    expect(server('body_timeout_ms: 0, body_min_rate: 0')).to.include({ body_timeout_ms: 0, body_min_rate: 0 });
    expectConfigError('server: { body_min_rate: -1 }', /server\.body_min_rate/);
  });

  it('answers two pipelined requests at once over all connections, unless told, and at least one', () => {
    const server = (yaml: string) => parseConfig(`server: { ${yaml} }`).server;
    expect(server('').pipelined_in_flight).to.equal(2);
    expect(server('pipelined_in_flight: 8').pipelined_in_flight).to.equal(8);
    expectConfigError('server: { pipelined_in_flight: 0 }', /server\.pipelined_in_flight/);
  });

  it('declares a provider from YAML alone, and refuses conflicting prefixes', () => {
    const c = parseConfig(
      'providers:\n  groq: { type: openai-compatible, base_url: "https://api.groq.com/openai/v1", prefixes: [llama-] }',
    );
    const registry = loadProviders(c);
    expect(registry.byModel('llama-3.3-70b')?.slug).to.equal('groq');
    expect(registry.get('groq')?.baseUrl).to.equal('https://api.groq.com/openai/v1');
    const clash = parseConfig(
      'providers:\n  fake: { type: openai-compatible, base_url: "http://x/v1", prefixes: [gpt-] }',
    );
    expect(() => loadProviders(clash)).to.throw(/prefix "gpt-" is claimed by both/);
  });

  describe('key strength', () => {
    const keyed = (key: string, token = 'an-admin-token-of-24-chars') =>
      `admin: { token: "${token}" }\nworkspaces:\n  - id: a\n    keys: [{ id: k, key: "${key}" }, { id: h, sha256: ${'ab'.repeat(32)} }]\n`;
    it('refuses a gateway key or an admin token shorter than 24 characters, each named with its length', () => {
      expectConfigError(
        keyed('a'),
        /workspaces\[0\]\.keys\[0\]\.key: this gateway key has 1 characters: at least 24 characters are required/,
      );
      expectConfigError(keyed('x'.repeat(23)), /this gateway key has 23 characters/);
      expectConfigError(keyed('x'.repeat(24), 'b'), /admin\.token: the admin token has 1 characters: at least 24/);
    });
    it('accepts 24 characters, an empty key (an unset ${GATEWAY_KEY:-}), a sha256 key and no admin token', () => {
      expect(parseConfig(keyed('x'.repeat(24), 'y'.repeat(24))).workspaces[0].keys).to.have.length(2);
      expect(() =>
        parseConfig('admin: { token: "" }\nworkspaces: [{ id: a, keys: [{ id: k, key: "${K:-}" }] }]'),
      ).to.not.throw();
    });
    it('security.allow_weak_keys: true accepts short ones (default false)', () => {
      expect(parseConfig('').security.allow_weak_keys).to.equal(false);
      const c = parseConfig(`security: { allow_weak_keys: true }\n${keyed('a', 'b')}`);
      expect(c.admin.token).to.equal('b');
      expect(c.workspaces[0].keys[0].key).to.equal('a');
    });
  });

  it('the shipped gateway.config.yaml is valid and takes GATEWAY_KEY from the environment', () => {
    const text = require('node:fs').readFileSync(resolve(PROJECT_ROOT, 'gateway.config.yaml'), 'utf8');
    const c = parseConfig(text, { GATEWAY_KEY: 'tg_from_the_environment_0000000001' });
    const keys = c.workspaces.flatMap((w) => w.keys);
    expect(keys.some((k) => k.key === 'tg_from_the_environment_0000000001')).to.equal(true);
    const registry = loadProviders(c);
    for (const slug of [
      'openai',
      'anthropic',
      'perplexity',
      'openrouter',
      'gemini',
      'mistral',
      'deepseek',
      'xai',
      'groq',
    ]) {
      expect(registry.get(slug), slug).to.not.equal(undefined);
    }
    expect(registry.byModel('gemini-2.5-flash')?.slug).to.equal('gemini');
    expect(registry.byModel('grok-4')?.slug).to.equal('xai');
  });

  describe('tollgate check-config', () => {
    const cli = resolve(PROJECT_ROOT, 'dist/cli/index.js');
    it('exits 0 on a valid file', () => {
      const out = execFileSync(
        process.execPath,
        [cli, 'check-config', '--config', resolve(PROJECT_ROOT, 'gateway.config.yaml')],
        { env: { ...process.env, GATEWAY_KEY: 'tg_from_the_environment_0000000001' } },
      );
      expect(out.toString()).to.match(/is valid/);
    });
    it('exits 2 on a short gateway key from the environment, naming the key and the remedy', () => {
      const r = spawnSync(
        process.execPath,
        [cli, 'check-config', '--config', resolve(PROJECT_ROOT, 'gateway.config.yaml')],
        { env: { ...process.env, GATEWAY_KEY: 'a' } },
      );
      expect(r.status).to.equal(2);
      expect(r.stderr.toString()).to.include(
        'workspaces[0].keys[0].key: this gateway key has 1 characters: at least 24 characters are required',
      );
      expect(r.stderr.toString()).to.include('security.allow_weak_keys');
    });
    it('exits 2 on bad plugin options, naming the plugin and the key, without starting anything', () => {
      const dir = mkdtempSync(join(tmpdir(), 'tollgate-cfg-'));
      const file = join(dir, 'plugins.yaml');
      writeFileSync(file, 'plugins:\n  - use: attribution\n    options: { max_keys: 0 }\n');
      const r = spawnSync(process.execPath, [cli, 'check-config', '--config', file]);
      expect(r.status).to.equal(2);
      expect(r.stderr.toString()).to.match(/plugins\[0\] \(attribution\): options\.max_keys/);
    });
    it('tollgate start refuses a short admin token before it listens: exit 2, naming admin.token', () => {
      const dir = mkdtempSync(join(tmpdir(), 'tollgate-cfg-'));
      const file = join(dir, 'weak.yaml');
      writeFileSync(file, 'server: { port: 0 }\nadmin: { port: 0, token: b }\nstorage: { url: "sqlite::memory:" }\n');
      const r = spawnSync(process.execPath, [cli, 'start', '--config', file], { timeout: 15_000 });
      expect(r.status).to.equal(2);
      expect(r.stderr.toString()).to.include(
        'admin.token: the admin token has 1 characters: at least 24 characters are required',
      );
    });
    it('exits 2 naming the key on an invalid file (also through GATEWAY_CONFIG)', () => {
      const dir = mkdtempSync(join(tmpdir(), 'tollgate-cfg-'));
      const file = join(dir, 'bad.yaml');
      writeFileSync(file, 'server:\n  port: -1\n');
      const r = spawnSync(process.execPath, [cli, 'check-config'], { env: { ...process.env, GATEWAY_CONFIG: file } });
      expect(r.status).to.equal(2);
      expect(r.stderr.toString()).to.match(/server\.port/);
    });
  });
});
