import { execFile } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { expect } from 'chai';
import { csvRows } from '../helpers/csv';
import { fixtureJson, PROJECT_ROOT } from '../helpers/fixtures';
import { waitForRecords } from '../helpers/admin';
import { startTestGateway, type TestGateway, chatThrough } from '../helpers/gateway';
import { TestUpstream } from '../helpers/upstream';

const run = promisify(execFile);
const CLI = resolve(PROJECT_ROOT, 'dist/cli/index.js');

/** A token count with thousands separators, written out by hand: 1024 -> "1,024". */
const grouped = (n: number): string => String(n).replace(/\B(?=(\d{3})+$)/g, ',');

/** Pico-USD rounded down to the cent ("0.01"); the amounts here stay below $1000. */
const centsDown = (pico: bigint): string => {
  const cents = pico / 10_000_000_000n;
  return `${cents / 100n}.${(cents % 100n).toString().padStart(2, '0')}`;
};

/** Pico-USD as the shortest exact USD decimal string. */
const usdOf = (pico: bigint): string =>
  `${pico / 1_000_000_000_000n}.${(pico % 1_000_000_000_000n).toString().padStart(12, '0')}`
    .replace(/0+$/, '')
    .replace(/\.$/, '');

describe('tollgate usage and tollgate usage reprice', () => {
  const upstream = new TestUpstream();
  let gw: TestGateway;
  let configFile: string;
  let recorded: any[];
  const cli = async (...args: string[]) =>
    (await run(process.execPath, [CLI, 'usage', ...args, '--config', configFile])).stdout;

  before(async () => {
    await upstream.start();
    gw = await startTestGateway(upstream.url);
    // Perplexity reports the search context size that picked its request fee: the recorded sonar answer, with
    // "high" added to its usage (real responses carry it, see SOURCES.md; this recording does not).
    const sonar = fixtureJson('perplexity/sonar_chat_completion.json');
    sonar.usage.search_context_size = 'high';
    upstream.respondWith((req) =>
      req.mount === 'perplexity'
        ? { headers: { 'content-type': 'application/json' }, body: Buffer.from(JSON.stringify(sonar)) }
        : undefined,
    );
    for (const [model, agent] of [
      ['codestral-late-priced', 'coder'],
      ['codestral-late-priced', 'coder'],
      ['gpt-4o-mini', 'support'],
      ['sonar', 'search'],
    ]) {
      const res = await chatThrough(gw, { 'x-gateway-metadata-agent': agent }, { model, messages: [] });
      await res.body.text();
    }
    recorded = await waitForRecords(gw, 4);
    await gw.stop();
    configFile = join(gw.dataDir, 'cli.yaml');
    // The price that arrives late: $1 per 1M input, $2 per 1M output, $0.5 per 1M cached input; and a sonar
    // price change (request fees per search context size).
    writeFileSync(
      configFile,
      `storage: { url: "sqlite:${gw.dataDir}/tollgate.db" }
providers:
  mistral: { type: openai-compatible, base_url: "http://127.0.0.1:1/v1", prefixes: [codestral-] }
pricing:
  models:
    - { provider: mistral, model: codestral-late-priced, input: "1", output: "2", cache_read: "0.5" }
    - { provider: perplexity, model: sonar, input: "2", output: "3", request_fee: { low: "0.004", medium: "0.007", high: "0.011" } }
`,
    );
  });
  after(() => upstream.stop());

  const record = (model: string) => recorded.find((r) => r.model === model);

  it('prints the grouping as a table: costs to the cent, "unknown" for unpriced groups, cache reads and writes apart', async () => {
    const gpt = record('gpt-4o-mini');
    const sonar = record('sonar');
    expect(BigInt(gpt.cost_pico) < 5_000_000_000n, 'a cost below half a cent').to.equal(true);
    expect(BigInt(gpt.cost_pico) > 0n).to.equal(true);
    const stdout = await cli('--group-by', 'agent');
    expect(stdout, stdout).to.match(
      /^agent\s+requests\s+input\s+output\s+cache read\s+cache write\s+cost\s+unpriced\s+not counted\s+estimated\s+partial$/m,
    );
    expect(stdout, stdout).to.match(/^coder\s+2\s+[\d,]+\s+[\d,]+\s+[\d,]+\s+0\s+unknown\s+2\s+0\s+0\s+0$/m);
    // A cost that is not zero but under half a cent is "<$0.01", never "$0.00" (--json has every digit).
    const support = `^support\\s+1\\s+${grouped(gpt.input_tokens)}\\s+${grouped(gpt.output_tokens)}\\s+${grouped(gpt.cache_read_tokens)}\\s+0\\s+<\\$0\\.01\\s+0\\s+0\\s+0\\s+0$`;
    expect(stdout, stdout).to.match(new RegExp(support, 'm'));
    // The total is a lower bound (2 records unpriced): rounded down to the cent, so it stays one.
    const known = BigInt(gpt.cost_pico) + BigInt(sonar.cost_pico);
    expect(stdout).to.include(`4 requests, >=$${centsDown(known)} (2 unpriced (cost unknown, not included)) from `);

    const byModel = await cli('--group-by', 'model');
    expect(byModel, byModel).to.match(/^codestral-late-priced\s+2\s.*\sunknown\s+2\s+0\s+0\s+0$/m);
  });

  it('--limit keeps the most expensive groups and sums the rest in one "other" row, like the API; --all and --csv', async () => {
    const ranked = JSON.parse(await cli('--group-by', 'agent', '--all', '--json'));
    expect(ranked.map((r: any) => r.group.agent).sort()).to.deep.equal(['coder', 'search', 'support']);
    const top = ranked[0];

    const table = await cli('--group-by', 'agent', '--limit', '1');
    const lines = table.split('\n\n')[0].split('\n');
    expect(lines, table).to.have.length(4); // header, rule, the top group, other
    expect(lines[2], table).to.match(new RegExp(`^${top.group.agent}\\s+${top.requests}\\s`));
    expect(lines[3], table).to.match(new RegExp(`^\\(2 other groups\\)\\s+${4 - top.requests}\\s`));
    expect(table).to.include('4 requests');
    expect(table).to.include('2 more groups in the other row: --limit or --all shows them');

    // The CSV of GET /api/usage.csv: the same page and other line, or every group with --all.
    const page = csvRows(await cli('--group-by', 'agent', '--limit', '1', '--csv'));
    expect(page[0].slice(0, 2)).to.deep.equal(['agent', 'requests']);
    expect(page.slice(1).map((r) => r.slice(0, 2))).to.deep.equal([
      [top.group.agent, String(top.requests)],
      ['(2 other groups)', String(4 - top.requests)],
    ]);
    const all = csvRows(await cli('--group-by', 'agent', '--all', '--csv'));
    expect(all.slice(1).map((r) => r[0])).to.deep.equal(ranked.map((r: any) => r.group.agent));
    expect(all.slice(1).reduce((n, r) => n + Number(r[1]), 0)).to.equal(4);
    // --all --csv streams the database's own ranking (the path of /api/usage.csv?limit=all); a page that holds every
    // group is ranked in memory: the two files are the same bytes.
    const range = ['--from', '2020-01-01', '--to', '2100-01-01'];
    const streamed = await cli('--group-by', 'agent,model', ...range, '--all', '--csv');
    expect(csvRows(streamed).length).to.be.greaterThan(3);
    expect(streamed).to.equal(await cli('--group-by', 'agent,model', ...range, '--limit', '1000', '--csv'));
  });

  it('reads only the storage settings: a ${VAR} elsewhere in the file need not be set for a report', async () => {
    const partial = join(gw.dataDir, 'partial.yaml');
    writeFileSync(
      partial,
      `storage: { url: "sqlite:${gw.dataDir}/tollgate.db" }
providers:
  mistral: { type: openai-compatible, base_url: "\${TOLLGATE_TEST_UNSET_BASE_URL}", prefixes: [codestral-] }
`,
    );
    const env = { ...process.env, TOLLGATE_TEST_UNSET_BASE_URL: '' };
    const report = async (...args: string[]) =>
      (await run(process.execPath, [CLI, 'usage', ...args, '--config', partial], { env })).stdout;
    const rows = JSON.parse(await report('--group-by', 'agent', '--json'));
    expect(rows.reduce((n: number, r: any) => n + r.requests, 0)).to.equal(4);
    // Repricing reads the providers and their prices: the unset variable is still named there.
    const reprice = await run(process.execPath, [CLI, 'usage', 'reprice', '--dry-run', '--config', partial], {
      env,
    }).catch((err: { stderr: string; code: number }) => err);
    expect(reprice).to.include({ code: 2 });
    expect((reprice as { stderr: string }).stderr).to.match(
      /providers\.mistral\.base_url: environment variable TOLLGATE_TEST_UNSET_BASE_URL is not set/,
    );
  });

  it('reprices records whose model got a price later, and Perplexity requests at the fee of their context size', async () => {
    const before = recorded.filter((r) => r.model === 'codestral-late-priced');
    expect(before.map((r) => r.provenance)).to.deep.equal(['unpriced', 'unpriced']);
    const sonar = record('sonar');
    expect(sonar.search_context_size).to.equal('high');
    // --dry-run first: old and new totals by model and how many would change, and nothing written.
    const dry = await cli('reprice', '--dry-run');
    expect(dry, dry).to.match(/^model\s+records\s+changed\s+old cost\s+old list\s+new cost\s+new list$/m);
    // No discount: each side's list cost is its cost.
    expect(dry, dry).to.match(/^codestral-late-priced\s+2\s+2\s+unknown\s+unknown\s+\$([0-9.]+)\s+\$\1$/m);
    // The fourth record's cost comes out the same: only the catalog version would move, so it is not rewritten.
    expect(dry, dry).to.match(/: 3 of 4 records would change; nothing was written$/m);
    expect(
      JSON.parse(await cli('--group-by', 'model', '--json')).find(
        (r: any) => r.group.model === 'codestral-late-priced',
      ),
    ).to.include({ cost_status: 'unknown' });
    const repriced = await cli('reprice');
    expect(repriced, repriced).to.match(/: 3 of 4 records changed/); // new costs for 3; the fourth keeps its row

    const rows = JSON.parse(await cli('--group-by', 'model', '--json'));
    const row = rows.find((r: any) => r.group.model === 'codestral-late-priced');
    // Independently: each record's tokens x the late price, in pico-USD (USD/1M = pico/token x 1e6).
    const expected = before.reduce(
      (sum, r) =>
        sum +
        BigInt(r.input_tokens) * 1_000_000n +
        BigInt(r.output_tokens) * 2_000_000n +
        BigInt(r.cache_read_tokens ?? 0) * 500_000n,
      0n,
    );
    expect(row).to.include({
      cost_pico: expected.toString(),
      cost_usd: usdOf(expected),
      cost_status: 'known',
      unpriced_count: 0,
    });
    // sonar: $2 / $3 per 1M tokens and the "high" request fee, $0.011 (not the default tier, low).
    const sonarRow = rows.find((r: any) => r.group.model === 'sonar');
    const sonarCost =
      BigInt(sonar.input_tokens) * 2_000_000n + BigInt(sonar.output_tokens) * 3_000_000n + 11_000_000_000n;
    expect(sonarRow.cost_pico).to.equal(sonarCost.toString());
  });
});
