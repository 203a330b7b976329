import { expect } from 'chai';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { request } from 'undici';
import { runCli } from '../helpers/cli';
import { OPENAI_KEY, startTestGateway, TEST_ADMIN_TOKEN, type TestGateway } from '../helpers/gateway';
import { TestUpstream } from '../helpers/upstream';

/** `tollgate budgets list|set|delete` against a running gateway's admin API, as an operator runs it. */
describe('tollgate budgets (CLI)', function () {
  this.timeout(60_000);
  const upstream = new TestUpstream();
  let gw: TestGateway;
  let file: string;
  const cli = (...args: string[]) => runCli(['-c', file, 'budgets', ...args]);

  before(async () => {
    await upstream.start();
    gw = await startTestGateway(
      upstream.url,
      `workspaces:
  - id: default
    keys: [{ id: test, key: "\${GATEWAY_KEY}" }]
    limits: { budgets: [{ period: month, usd: "1000" }] }
`,
    );
    const { port } = new URL(gw.adminUrl!);
    file = join(gw.dataDir, 'cli.config.yaml');
    writeFileSync(file, `admin: { host: 127.0.0.1, port: ${port}, token: "${TEST_ADMIN_TOKEN}" }\n`);
    const res = await request(`${gw.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-gateway-key': gw.key, authorization: `Bearer ${OPENAI_KEY}` },
      body: JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }], max_tokens: 100 }),
    });
    expect(res.statusCode).to.equal(200);
    await res.body.text();
  });
  after(async () => {
    await gw?.stop();
    await upstream.stop();
  });

  it('sets, lists (table and --json), changes and deletes a runtime budget; refuses what the admin API refuses', async () => {
    const created = await cli(
      'set',
      '--period=day',
      '--usd=25',
      '--key=test',
      '--on-exceed=clamp',
      '--min-output-tokens=300',
      '--alert-at=0.5,0.9',
      '--json',
    );
    expect(created.code, created.stderr).to.equal(0);
    const budget = JSON.parse(created.stdout);
    expect(budget).to.deep.include({ workspace: 'default', key: 'test', usd: '25', on_exceed: 'clamp' });
    expect(budget).to.deep.include({ min_output_tokens: 300, alert_at: [0.5, 0.9] });

    const listed = await cli('list', '--json');
    expect(listed.code, listed.stderr).to.equal(0);
    const rows = JSON.parse(listed.stdout);
    expect(rows.map((r: any) => [r.id, r.scope, r.limit_usd, r.action])).to.have.deep.members([
      ['yaml:default:0', 'workspace', '1000', 'block'],
      [budget.id, 'key_id=test', '25', 'clamp'],
    ]);
    const yaml = rows.find((r: any) => r.id === 'yaml:default:0');
    expect(Number(yaml.spent_usd), 'the request before was counted').to.be.above(0);

    const table = await cli('list');
    expect(table.code, table.stderr).to.equal(0);
    const [header, , ...lines] = table.stdout.trimEnd().split('\n');
    expect(header.split(/\s{2,}/)).to.deep.equal([
      'id',
      'workspace',
      'scope',
      'period',
      'spent',
      'limit',
      'used',
      'forecast',
      'action',
    ]);
    const line = lines.find((l) => l.startsWith(budget.id))!;
    expect(line.split(/\s{2,}/)).to.include.members(['key_id=test', 'day', '$25', 'clamp']);

    const changed = await cli('set', budget.id, '--usd=30');
    expect(changed.code, changed.stderr).to.equal(0);
    expect(changed.stdout).to.equal(`Changed ${budget.id}\n`);
    const after = JSON.parse((await cli('list', '--json')).stdout);
    expect(after.find((r: any) => r.id === budget.id).limit_usd).to.equal('30');

    const readOnly = await cli('set', 'yaml:default:0', '--usd=1');
    expect(readOnly.code).to.equal(2);
    expect(readOnly.stderr).to.include('comes from gateway.config.yaml').and.include('409 budget_read_only');
    const incomplete = await cli('set', '--period=day');
    expect(incomplete.code).to.equal(2);
    expect(incomplete.stderr).to.include('a new budget needs --period and --usd');
    const bad = await cli('set', '--period=day', '--usd=5', '--on-exceed=drop');
    expect(bad.code).to.equal(2);
    expect(bad.stderr).to.include('on_exceed must be warn, block or clamp');

    const deleted = await cli('delete', budget.id);
    expect(deleted.stdout).to.equal(`Deleted ${budget.id}\n`);
    const left = JSON.parse((await cli('list', '--json')).stdout);
    expect(left.map((r: any) => r.id)).to.deep.equal(['yaml:default:0']);
    const again = await cli('delete', budget.id, '--json');
    expect(again.code).to.equal(2);
    expect(again.stderr).to.include('budget_not_found');

    const down = await cli('list', '--admin-url=http://127.0.0.1:9');
    expect(down.code).to.equal(2);
    expect(down.stderr).to.include('cannot reach the admin API at http://127.0.0.1:9');
  });
});
