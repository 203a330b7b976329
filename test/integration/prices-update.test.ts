import { expect } from 'chai';
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { request } from 'undici';
import { waitForRecords } from '../helpers/admin';
import { runCli } from '../helpers/cli';
import { fixtureBytes, fixturePath } from '../helpers/fixtures';
import { OPENAI_KEY, providerBlock, startTestGateway } from '../helpers/gateway';
import { TestUpstream } from '../helpers/upstream';

/** A LiteLLM price file in LiteLLM's format (test/fixtures/SOURCES.md says what differs from the bundled prices). */
const SUBSET = fixturePath('litellm/model_prices_subset.json');

/** The deployment's price overrides, the same for the CLI and the gateway (so both compute one price version). */
const PRICING = (catalogFile: string) => `
pricing:
  catalog_file: "${catalogFile}"
  models:
    - { provider: openai, model: gpt-4o-mini, input: "0.1", output: "0.5", cache_read: "0.05" }
`;

describe('tollgate prices update', function () {
  // Each test runs the CLI as a process several times (a few seconds each on a busy machine).
  this.timeout(120_000);
  const upstream = new TestUpstream();
  let dir: string;
  let config: string;
  let catalogFile: string;
  const prices = (...args: string[]) => runCli(['prices', 'update', ...args, '--config', config]);

  before(() => upstream.start());
  after(() => upstream.stop());
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'tollgate-prices-'));
    catalogFile = join(dir, 'data', 'prices.json');
    config = join(dir, 'gateway.config.yaml');
    writeFileSync(
      config,
      `storage: { url: "sqlite:./data/t.db" }\n${providerBlock(upstream.url)}${PRICING(catalogFile)}`,
    );
  });

  it('--dry-run prints what would change and writes nothing', async () => {
    const run = await prices('--from', SUBSET, '--dry-run');
    expect(run.stderr).to.equal('');
    expect(run.code).to.equal(0);
    expect(run.stdout).to.include("imported 8 models of the gateway's providers");
    expect(run.stdout).to.include('prices in force: 2 models added, 1 changed, 0 removed');
    expect(run.stdout).to.include('+ openai/gpt-3.5-turbo\n');
    expect(run.stdout).to.include('+ openai/gpt-3.5-turbo-0613\n');
    expect(run.stdout).to.include('~ mistral/mistral-small-latest: input 0.06 -> 0.1, output 0.18 -> 0.3');
    expect(run.stdout).to.include(`dry run: nothing written (${catalogFile})`);
    expect(existsSync(catalogFile)).to.equal(false);
    expect(existsSync(join(dir, 'data'))).to.equal(false);
  });

  it('imports a file, keeps the local overrides, and the gateway prices with both from its next start', async () => {
    const run = await prices('--from', SUBSET, '--json');
    expect(run.code, run.stderr).to.equal(0);
    const out = JSON.parse(run.stdout);
    expect(out).to.include({ written: true, file: catalogFile, entries: 10, imported: 8 });
    // What it left out is listed with the reason, not counted.
    expect(out.skipped).to.deep.equal([
      {
        provider: 'openai',
        model: 'dall-e-3',
        field: '*',
        reason: 'no per-token or per-request price (non-token pricing is not represented)',
      },
    ]);
    expect(out.added).to.deep.equal(['openai/gpt-3.5-turbo', 'openai/gpt-3.5-turbo-0613']);
    expect(out.removed).to.deep.equal([]);
    // The file has gpt-4o-mini at $0.15 / $0.60: pricing.models says $0.10 / $0.50, and keeps saying so.
    expect(out.kept_overrides).to.deep.equal(['openai/gpt-4o-mini']);
    const written = JSON.parse(readFileSync(catalogFile, 'utf8'));
    expect(written.version).to.equal(out.imported_version);
    expect(written.models.map((m: any) => `${m.provider}/${m.model}`)).to.include('openai/gpt-3.5-turbo-0613');

    // The same file again changes nothing.
    const again = await prices('--from', SUBSET);
    expect(again.code).to.equal(0);
    expect(again.stdout).to.include('prices in force: 0 models added, 0 changed, 0 removed');

    const gw = await startTestGateway(upstream.url, PRICING(catalogFile));
    try {
      const res = await request(`${gw.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-gateway-key': gw.key, authorization: `Bearer ${OPENAI_KEY}` },
        body: JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] }),
      });
      await res.body.text();
      const [r] = await waitForRecords(gw, 1);
      // The recorded answer (gpt-4o-mini-2024-07-18): 1,149 prompt tokens of which 1,024 cached, 353 output.
      // pricing.models: 125 x $0.10 + 1,024 x $0.05 + 353 x $0.50 per million = $0.0002402.
      expect(r).to.include({
        model: 'gpt-4o-mini',
        price_id: 'openai/gpt-4o-mini',
        cost_pico: '240200000',
        price_version: out.price_version,
      });
      // The version the gateway records is the one the update announced: bundled + imported + overrides.
      expect(out.price_version).to.match(/^\d{4}-\d{2}-\d{2}\.\d+\+[0-9a-f]{12}$/);
    } finally {
      await gw.stop();
    }
  });

  it("keeps the bundled rates the file has none for and lists them; a snapshot at its family's prices is no new model", async () => {
    const source = JSON.parse(fixtureBytes('litellm/model_prices_subset.json').toString('utf8'));
    // No cache price for deepseek-chat (whose input changes), nor for gpt-4o-mini and its dated snapshot.
    source['deepseek/deepseek-chat'].input_cost_per_token = 3e-7;
    for (const id of ['deepseek/deepseek-chat', 'gpt-4o-mini', 'gpt-4o-mini-2024-07-18'])
      delete source[id].cache_read_input_token_cost;
    const file = join(dir, 'no-cache.json');
    writeFileSync(file, JSON.stringify(source));
    const out = JSON.parse((await prices('--from', file, '--json')).stdout);
    // gpt-4o-mini keeps the rate too, but pricing.models prices it: only deepseek-chat is listed.
    expect(out.kept_bundled).to.deep.equal([{ id: 'deepseek/deepseek-chat', fields: ['cache_read 0.028'] }]);
    expect(out.changed).to.deep.include({ id: 'deepseek/deepseek-chat', fields: ['input 0.28 -> 0.3'] });
    expect(out.added).to.deep.equal(['openai/gpt-3.5-turbo', 'openai/gpt-3.5-turbo-0613']);
    const text = await prices('--from', file, '--dry-run');
    expect(text.stdout).to.include(
      'bundled rates kept: 1 imported model keeps bundled rates the source has none for\n  = deepseek/deepseek-chat: cache_read 0.028\n',
    );
    const lookup = await runCli(['prices', 'lookup', 'deepseek', 'deepseek-chat', '--config', config]);
    expect(lookup.stdout).to.match(
      /^price id deepseek\/deepseek-chat \(imported\)\ninput 0\.3, output 0\.42, cache_read 0\.028 /,
    );
    const snapshot = await runCli(['prices', 'lookup', 'openai', 'gpt-4o-mini-2024-07-18', '--config', config]);
    expect(snapshot.stdout).to.match(/^price id openai\/gpt-4o-mini \(override, matched as /);
  });

  it('says which models a later file no longer prices', async () => {
    expect((await prices('--from', SUBSET)).code).to.equal(0);
    const later = JSON.parse(fixtureBytes('litellm/model_prices_subset.json').toString('utf8'));
    delete later['gpt-3.5-turbo-0613'];
    const laterFile = join(dir, 'later.json');
    writeFileSync(laterFile, JSON.stringify(later));
    const run = await prices('--from', laterFile);
    expect(run.code).to.equal(0);
    expect(run.stdout).to.include('prices in force: 0 models added, 0 changed, 1 removed');
    expect(run.stdout).to.include('- openai/gpt-3.5-turbo-0613\n');
  });

  it('warns on stderr when a rate that was set becomes $0, and lists it in --json', async () => {
    const zeroed = JSON.parse(fixtureBytes('litellm/model_prices_subset.json').toString('utf8'));
    zeroed['mistral/mistral-small-latest'].input_cost_per_token = 0;
    const file = join(dir, 'zeroed.json');
    writeFileSync(file, JSON.stringify(zeroed));
    const run = await prices('--from', file, '--dry-run');
    expect(run.code).to.equal(0);
    expect(run.stderr).to.include(
      'tollgate: warning: mistral/mistral-small-latest: input 0.06 -> 0: a rate that was set',
    );
    const json = JSON.parse((await prices('--from', file, '--dry-run', '--json')).stdout);
    expect(json.zeroed).to.deep.equal([{ id: 'mistral/mistral-small-latest', fields: ['input 0.06 -> 0'] }]);
    // The file as published zeroes nothing: no warning.
    expect((await prices('--from', SUBSET, '--dry-run')).stderr).to.equal('');
  });

  it('prices lookup names the entry a model is billed at, the price id its records carry', async () => {
    const run = await runCli(['prices', 'lookup', 'openai', 'gpt-4-0613', '--config', config]);
    expect(run.code, run.stderr).to.equal(0);
    expect(run.stdout).to.match(/^price id openai\/gpt-4 \(bundled, matched as dated snapshot\)\ninput 30, output 60 /);
    const json = await runCli(['prices', 'lookup', 'openai', 'gpt-4-0613', '--json', '--config', config]);
    expect(JSON.parse(json.stdout)).to.deep.include({
      price_id: 'openai/gpt-4',
      origin: 'bundled',
      matched_as: 'dated_snapshot',
      rates: { input: '30', output: '60' },
    });
    const none = await runCli(['prices', 'lookup', 'openai', 'gpt-4-32k-0613', '--config', config]);
    expect(none.code).to.equal(2);
    expect(none.stderr).to.equal(
      'tollgate: openai/gpt-4-32k-0613 has no price: its requests are recorded as unpriced\n',
    );
  });

  describe('from a URL', () => {
    let server: Server;
    let base: string;
    const served: string[] = [];
    before(async () => {
      server = createServer((req, res) => {
        served.push(req.url ?? '');
        if (req.url === '/model_prices_and_context_window.json') {
          res.writeHead(200, { 'content-type': 'text/plain; charset=utf-8' });
          res.end(fixtureBytes('litellm/model_prices_subset.json'));
        } else {
          res.writeHead(404, { 'content-type': 'text/plain' });
          res.end('404: Not Found');
        }
      });
      await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
      base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    });
    after(() => new Promise<void>((done) => server.close(() => done())));

    it('downloads the file over HTTP and imports it', async () => {
      const url = `${base}/model_prices_and_context_window.json`;
      const run = await prices('--from', url);
      expect(run.code, run.stderr).to.equal(0);
      expect(run.stdout).to.include(`read ${url}: 10 entries`);
      expect(served).to.include('/model_prices_and_context_window.json');
      expect(JSON.parse(readFileSync(catalogFile, 'utf8')).source).to.equal(url);
    });

    it('refuses an answer that is not 200, naming the status, and writes nothing', async () => {
      const run = await prices('--from', `${base}/missing.json`);
      expect(run.code).to.equal(2);
      expect(run.stderr).to.equal(`tollgate: cannot download ${base}/missing.json: HTTP 404 Not Found\n`);
      expect(existsSync(catalogFile)).to.equal(false);
    });
  });

  describe('malformed input', () => {
    const cases: [string, string, RegExp][] = [
      ['text that is not JSON', '{"gpt-4o": {"input_cost_per_token": 2.5e-06,', /is not valid JSON/],
      ['a JSON array', '[{"gpt-4o": {}}]', /expected a JSON object keyed by model id/],
      [
        'an object without a priced entry of a gateway provider',
        '{"anthropic.claude-v2": {"litellm_provider": "bedrock", "input_cost_per_token": 8e-06}, "gpt-x": {"litellm_provider": "openai", "input_cost_per_token": "cheap"}}',
        /has no entry with a token or request price for a gateway provider \(2 entries read\)/,
      ],
    ];
    it('refuses each with exit 2 and one line, and leaves the catalog written before as it was', async () => {
      expect((await prices('--from', SUBSET)).code).to.equal(0);
      const before = readFileSync(catalogFile);
      for (const [name, text, message] of cases) {
        const bad = join(dir, 'bad.json');
        writeFileSync(bad, text);
        const run = await prices('--from', bad);
        expect(run.code, name).to.equal(2);
        expect(run.stdout, name).to.equal('');
        expect(run.stderr, name).to.match(message);
        expect(run.stderr, name).to.match(/; nothing written\n$/);
        expect(run.stderr.split('\n'), name).to.have.length(2);
        expect(readFileSync(catalogFile).equals(before), name).to.equal(true);
      }
    });

    it('a file that is not there is a one-line error', async () => {
      const run = await prices('--from', join(dir, 'nope.json'));
      expect(run.code).to.equal(2);
      expect(run.stderr).to.match(/^tollgate: cannot read .*nope\.json: ENOENT/);
    });

    it('a damaged imported catalog stops check-config, naming the file, and the next update replaces it', async () => {
      expect((await prices('--from', SUBSET)).code).to.equal(0);
      writeFileSync(catalogFile, '{"version": "imported-0"}');
      const check = await runCli(['check-config', '--config', config]);
      expect(check.code).to.equal(2);
      expect(check.stderr).to.include(
        `imported price catalog ${catalogFile} is not one \`tollgate prices update\` wrote`,
      );
      const run = await prices('--from', SUBSET);
      expect(run.code).to.equal(0);
      expect(run.stderr).to.include(`warning: imported price catalog ${catalogFile}`);
      expect((await runCli(['check-config', '--config', config])).code).to.equal(0);
    });
  });
});
