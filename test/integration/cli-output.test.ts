/**
 * What the CLI prints for people and for scripts: aligned tables in any script, thousands separators, cents,
 * exact values under --json, progress on stderr only (a bar under a terminal, plain lines elsewhere), and a quiet
 * exit when the reader of its output goes away. The real built CLI as a child process, on a database filled
 * through a real gateway.
 */
import { spawn, spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'chai';
import { waitForRecords } from '../helpers/admin';
import { CLI, runCli } from '../helpers/cli';
import { fixtureJson } from '../helpers/fixtures';
import { startTestGateway, type TestGateway, chatThrough } from '../helpers/gateway';
import { TestUpstream } from '../helpers/upstream';
import { requireService } from '../helpers/services';

/** Team tags in three scripts; \u escapes keep the metadata header ASCII, as a client would send it. */
const TEAMS = ['東京チーム', '🚀 launch', 'plain'];
const INPUT = 1_234_567;
const OUTPUT = 1_000;

/**
 * Display columns of the test's own strings, written out independently of the code under test: the CJK and
 * emoji characters used here take two columns in a terminal, everything else one.
 */
function columnsOf(text: string): string[] {
  const cols: string[] = [];
  for (const ch of text) {
    const cp = ch.codePointAt(0)!;
    const wide = (cp >= 0x3000 && cp <= 0x9fff) || (cp >= 0x1f300 && cp <= 0x1faff);
    cols.push(ch);
    if (wide) cols.push(''); // the second column of a wide character
  }
  return cols;
}

/**
 * The table cut at the columns of its dashed rule: each line's cells (trimmed), whether each cell reaches the
 * right edge of its column (right-aligned), and what stands in the gaps between columns.
 */
function cellsByRule(table: string[]): { cells: string[][]; flushRight: boolean[][]; gaps: string[] } {
  const spans = [...table[1].matchAll(/-+/g)].map((m): [number, number] => [m.index!, m.index! + m[0].length]);
  const gaps: string[] = [];
  const lines = table.map(columnsOf);
  for (const cols of lines) spans.slice(1).forEach(([start], i) => gaps.push(cols.slice(spans[i][1], start).join('')));
  return {
    cells: lines.map((cols) => spans.map(([start, end]) => cols.slice(start, end).join('').trim())),
    flushRight: lines.map((cols) => spans.map(([, end]) => (cols[end - 1] ?? ' ') !== ' ')),
    gaps,
  };
}

describe('tollgate CLI: tables, --json and progress', function () {
  this.timeout(60_000);
  const upstream = new TestUpstream();
  let gw: TestGateway;
  let config: string;

  before(async () => {
    await upstream.start();
    // A recorded chat completion with large token counts (cached none), so separators and dollars show.
    const completion = fixtureJson('openai/chat_completion_cached_tokens.json');
    completion.usage = {
      ...completion.usage,
      prompt_tokens: INPUT,
      completion_tokens: OUTPUT,
      total_tokens: INPUT + OUTPUT,
      prompt_tokens_details: { cached_tokens: 0, audio_tokens: 0 },
    };
    upstream.respondWith((req) =>
      req.mount === 'openai'
        ? { headers: { 'content-type': 'application/json' }, body: Buffer.from(JSON.stringify(completion)) }
        : undefined,
    );
    // $1000 / $2000 per 1M input / output tokens: each request costs 1,234,567 x $0.001 + 1,000 x $0.002 = $1,236.567.
    gw = await startTestGateway(
      upstream.url,
      'pricing: { models: [{ provider: openai, model: gpt-4o-mini, input: "1000", output: "2000" }] }\n',
    );
    for (const team of TEAMS) {
      const metadata = JSON.stringify({ team }).replace(
        /[\u0080-\uffff]/g,
        (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`,
      );
      const res = await chatThrough(gw, { 'x-gateway-metadata': metadata }, { messages: [] });
      await res.body.text();
    }
    await waitForRecords(gw, TEAMS.length);
    await gw.stop();
    config = join(gw.dataDir, 'cli.yaml');
    writeFileSync(
      config,
      `storage: { url: "sqlite:${gw.dataDir}/tollgate.db" }\npricing: { models: [{ provider: openai, model: gpt-4o-mini, input: "1000", output: "2000" }] }\n`,
    );
  });
  after(() => upstream.stop());

  it('aligns CJK and emoji tag values, separates thousands, and shows money to the cent', async () => {
    const run = await runCli(['usage', '--group-by', 'team', '--config', config]);
    expect(run.code, run.stderr).to.equal(0);
    const [table, summary] = run.stdout.split('\n\n');
    const { cells, flushRight, gaps } = cellsByRule(table.split('\n'));
    expect(
      gaps.every((g) => g === '  '),
      `columns two spaces apart:\n${table}`,
    ).to.equal(true);
    expect(cells[0]).to.deep.equal([
      'team',
      'requests',
      'input',
      'output',
      'cache read',
      'cache write',
      'cost',
      'unpriced',
      'not counted',
      'estimated',
      'partial',
    ]);
    expect(
      cells
        .slice(2)
        .map((r) => r[0])
        .sort(),
    ).to.deep.equal([...TEAMS].sort());
    for (const row of cells.slice(2))
      expect(row.slice(1), table).to.deep.equal(['1', '1,234,567', '1,000', '0', '0', '$1,236.57', '0', '0', '0', '0']);
    // Numbers are right-aligned (headers with them); the tag column is not.
    for (const [i, line] of flushRight.entries())
      expect(line.slice(1), `line ${i}:\n${table}`).to.deep.equal(Array(10).fill(true));
    expect(summary).to.match(/^3 requests, \$3,709\.70 from /);
  });

  it('--json keeps exact values and the field names of GET /api/usage', async () => {
    const run = await runCli(['usage', '--group-by', 'team', '--json', '--config', config]);
    expect(run.code, run.stderr).to.equal(0);
    const rows = JSON.parse(run.stdout);
    expect(rows.map((r: any) => r.group.team).sort()).to.deep.equal([...TEAMS].sort());
    for (const row of rows) {
      expect(row).to.include({
        requests: 1,
        input_tokens: INPUT,
        output_tokens: OUTPUT,
        cost_usd: '1236.567',
        cost_pico: '1236567000000000',
        cost_status: 'known',
      });
    }
  });

  it('keys list --json: the fields of GET /api/keys', async () => {
    const created = await runCli(['keys', 'create', '--label', 'ラベル', '--json', '--config', config]);
    expect(created.code, created.stderr).to.equal(0);
    const key = JSON.parse(created.stdout);
    expect(key.key).to.match(/^tg_[A-Za-z0-9_-]{43}$/);
    const list = await runCli(['keys', 'list', '--json', '--config', config]);
    const listed = JSON.parse(list.stdout).find((k: any) => k.id === key.id);
    expect(Object.keys(listed).sort()).to.deep.equal([
      'created_at',
      'id',
      'label',
      'last_used_at',
      'revoked',
      'revoked_at',
      'source',
      'workspace',
    ]);
    expect(listed).to.include({
      workspace: 'default',
      label: 'ラベル',
      revoked: false,
      source: 'store',
      last_used_at: null,
    });
    expect(list.stdout).to.not.include(key.key);
  });

  it('keys list shows the keys of the config file too; keys revoke and check-config take --json', async () => {
    const withKeys = join(gw.dataDir, 'cli-keys.yaml');
    writeFileSync(
      withKeys,
      `storage: { url: "sqlite:${gw.dataDir}/tollgate.db" }
workspaces:
  - id: default
    keys: [{ id: from-file, sha256: "${'ab'.repeat(32)}", label: "in the file" }]
`,
    );
    const listed = JSON.parse((await runCli(['keys', 'list', '--json', '--config', withKeys])).stdout);
    expect(listed.find((k: any) => k.id === 'from-file')).to.deep.equal({
      id: 'from-file',
      workspace: 'default',
      label: 'in the file',
      created_at: null,
      last_used_at: null,
      revoked: false,
      revoked_at: null,
      source: 'config',
    });
    const table = (await runCli(['keys', 'list', '--config', withKeys])).stdout;
    expect(table, table).to.match(/^from-file\s+default\s+in the file\s+config\s+-\s+-\s+active$/m);
    expect(table).to.not.include('ab'.repeat(32));

    const created = JSON.parse((await runCli(['keys', 'create', '--json', '--config', withKeys])).stdout);
    const revoked = await runCli(['keys', 'revoke', created.id, '--json', '--config', withKeys]);
    expect(revoked.code, revoked.stderr).to.equal(0);
    expect(JSON.parse(revoked.stdout)).to.deep.equal({ id: created.id, revoked: true });

    const valid = await runCli(['check-config', '--json', '--config', withKeys]);
    expect(valid.code, valid.stderr).to.equal(0);
    expect(JSON.parse(valid.stdout)).to.include({ valid: true, path: withKeys, workspaces: 1 });
    const broken = join(gw.dataDir, 'cli-broken.yaml');
    writeFileSync(broken, 'server: { port: "many" }\n');
    const invalid = await runCli(['check-config', '--json', '--config', broken]);
    expect(invalid.code).to.equal(2);
    const answer = JSON.parse(invalid.stdout);
    expect(answer.valid).to.equal(false);
    expect(answer.error).to.include('server.port');
  });

  it('exits quietly when the reader of its output is gone (usage | head)', async () => {
    for (const args of [
      ['usage', '--group-by', 'team'],
      ['keys', 'list'],
      ['usage', '--json'],
    ]) {
      const child = spawn(process.execPath, [CLI, ...args, '--config', config], { stdio: ['ignore', 'pipe', 'pipe'] });
      child.stdout.destroy(); // the reader leaves before the first line is written
      let stderr = '';
      child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
      const code = await new Promise<number | null>((r) => child.once('close', r));
      expect({ args, code, stderr }).to.deep.equal({ args, code: 0, stderr: '' });
    }
  });

  it('usage reprice without a terminal: plain progress lines on stderr, the result alone on stdout', async () => {
    const run = await runCli(['usage', 'reprice', '--config', config]);
    expect(run.code, run.stderr).to.equal(0);
    expect(run.stdout).to.match(/^repriced with catalog \S+: \d+ of 3 records changed\n$/);
    expect(run.stderr).to.equal('usage reprice: 3 records\n');
    const json = await runCli(['usage', 'reprice', '--json', '--config', config]);
    expect(JSON.parse(json.stdout)).to.include({ scanned: 3, updated: 0 });
  });

  it('usage reprice under a terminal: a progress bar', function () {
    requireService(
      this,
      'usage reprice under a terminal',
      spawnSync('script', ['--version']).status === 0,
      'no script(1) here to run the CLI under a pseudo-terminal (install util-linux or bsdutils)',
    );
    // script(1) gives the CLI a pseudo-terminal for its stdin, stdout and stderr, and copies what it shows.
    const shown = spawnSync(
      'script',
      ['-qefc', `${process.execPath} ${CLI} usage reprice --config ${config}`, '/dev/null'],
      { encoding: 'utf8', timeout: 30_000 },
    );
    expect(shown.status, shown.stdout).to.equal(0);
    expect(shown.stdout).to.match(/usage reprice \[[█░]+\] 100% \| 3 of 3 records/);
    expect(shown.stdout).to.match(/repriced with catalog \S+: 0 of 3 records changed/);
  });

  it('demo without a terminal: its progress as plain lines on stderr', async function () {
    const child = spawn(process.execPath, [CLI, 'demo', '-n', '40', '--days', '2', '--admin-port', '0'], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const exited = new Promise<number | null>((r) => child.once('exit', r));
    await new Promise<void>((ready, fail) => {
      child.stdout.on('data', (d: Buffer) => (stdout += d.toString()).includes('Press Ctrl-C') && ready());
      void exited.then((code) => fail(new Error(`demo exited ${code}: ${stderr}`)));
    });
    child.kill('SIGTERM');
    expect(await exited).to.equal(0);
    expect(stdout).to.include('Recorded 40 requests over the past 2 days');
    expect(stderr).to.equal(
      'Tollgate demo: sending 40 requests through the gateway to a loopback mock provider...\ndemo: 40 requests\n',
    );
  });
});
