/**
 * The budgets page in Debian's Chromium (playwright-core), used as an admin would: a runtime budget created through
 * the form (what the form or the API refuses shown beside the field), seen in the list with the spend of real proxied
 * requests, changed; then a spend freeze made by a real spike of requests, seen on the page with its alert, and
 * lifted there.
 */
import { expect } from 'chai';
import { adminGet, waitForRecords } from '../helpers/admin';
import { AlertReceiver } from '../helpers/alert-receiver';
import { cachedAnswerCost } from '../helpers/answer-cost';
import { chatThrough, type TestGateway } from '../helpers/gateway';
import { rememberSecret } from '../helpers/secret-scan';
import { waitFor } from '../helpers/wait';
import { resultPath, useDashboard } from './browser';

const ONE = cachedAnswerCost();
const SECRET = 'whsec-PLANTED-SECRET-budgets-page-0001';
rememberSecret(SECRET, 'alert webhook secret');
const PICO = 10n ** 12n;
const usd = (p: bigint) => `${p / PICO}.${(p % PICO).toString().padStart(12, '0')}`;
const pico = (text: string) => {
  const [whole, frac = ''] = text.split('.');
  return BigInt(whole) * PICO + BigInt(frac.padEnd(12, '0'));
};

/**
 * A one-second anomaly window, so that the spike is seen in seconds: the store starts empty, so the key's baseline is
 * $0 and the floor of six answers decides. The steady requests before it stay under the floor.
 */
const yaml = (hook: AlertReceiver) => `
budgets: { runtime_refresh_ms: 200 }
workspaces:
  - id: default
    keys: [{ id: test, key: "\${GATEWAY_KEY}" }]
    limits: { budgets: [{ period: month, usd: "1000" }] }
alerts:
  evaluate_every_ms: 100
  delivery: { timeout_ms: 1000, backoff_ms: 50, max_backoff_ms: 400, poll_ms: 50 }
  channels: [{ name: ${hook.name}, type: webhook, url: "${hook.url}", secret: "${SECRET}" }]
  anomalies:
    - { name: key-loop, scope: key, window_ms: 1000, baseline_ms: 4000, factor: 4, min_usd: "${usd(ONE * 6n)}", action: freeze, freeze_ms: 600000 }
`;

async function chat(gw: TestGateway, customer: string) {
  const res = await chatThrough(
    gw,
    { 'x-gateway-metadata': JSON.stringify({ customer_id: customer }) },
    { max_tokens: 100 },
  );
  const text = await res.body.text();
  return { status: res.statusCode, code: text.startsWith('{"error"') ? JSON.parse(text).error.code : undefined };
}

describe('dashboard budgets page (Chromium, playwright-core)', function () {
  const hook = new AlertReceiver('budgets-page-webhook');
  before(() => hook.start());
  after(() => hook.stop());
  const suite = useDashboard({
    yaml: () => yaml(hook),
    seed: async (gw) => {
      for (const customer of ['acme', 'globex']) expect((await chat(gw, customer)).status).to.equal(200);
      await waitForRecords(gw, 2);
    },
  });
  let created = '';

  const openBudgets = async () => {
    await suite.page.goto(`${suite.gw.adminUrl}/#/budgets`);
    await suite.page.reload();
    await suite.page.waitForSelector('#view[data-view="budgets"][data-ready="true"]');
  };
  const listed = async () => (await adminGet(suite.gw, '/api/budgets')).data as any[];
  const cell = (scope: string, col: string) => `#budgets tr[data-scope="${scope}"] td[data-col="${col}"]`;

  it("lists the YAML budget read-only, and shows the form's and the API's refusals beside the field they name", async () => {
    const page = suite.page;
    await openBudgets();
    expect(await page.textContent(cell('workspace', 'budget')))
      .to.include('yaml:default:0')
      .and.include('yaml');
    expect(await page.$('#budgets tr[data-budget="yaml:default:0"] [data-edit]'), 'no Edit for a YAML budget').to.equal(
      null,
    );

    await page.selectOption('#budget-scope', 'tag');
    await page.fill('#budget-tag-name', 'project');
    await page.fill('#budget-tag-value', 'apollo');
    await page.fill('#budget-usd', 'ten dollars');
    await page.click('#budget-form button[type=submit]');
    expect(await page.textContent('[data-error-for="usd"]')).to.include('USD');
    expect((await listed()).map((b) => b.id)).to.deep.equal(['yaml:default:0']);

    await page.fill('#budget-usd', '5');
    await page.click('#budget-form button[type=submit]');
    await page.waitForSelector('[data-error-for="tag_name"]:not(:empty)');
    expect(await page.textContent('[data-error-for="tag_name"]')).to.include('Unknown tag "project"');
    expect(await page.textContent('[data-error-for="usd"]')).to.equal('');
    expect((await listed()).map((b) => b.id)).to.deep.equal(['yaml:default:0']);
  });

  it('creates a budget for one customer; the list shows it with the spend of its requests', async () => {
    const page = suite.page;
    await page.fill('#budget-tag-name', 'customer_id');
    await page.fill('#budget-tag-value', 'acme');
    await page.selectOption('#budget-period', 'day');
    await page.selectOption('#budget-on-exceed', 'warn');
    await page.click('#budget-form button[type=submit]');
    await page.waitForSelector(cell('customer_id=acme', 'spend'));

    const api = (await listed()).find((b) => b.scope === 'customer_id=acme');
    expect(api).to.include({ source: 'runtime', period: 'day', limit_usd: '5', action: 'alert' });
    expect(pico(api.spent_usd), 'one request of acme was recorded').to.equal(ONE);
    created = api.id;
    const spend = await page.$eval(cell('customer_id=acme', 'spend'), (td) => ({ ...(td as HTMLElement).dataset }));
    expect(spend).to.include({ spent: api.spent_usd, limit: '5' });
    expect(await page.textContent(cell('customer_id=acme', 'spend'))).to.include('of $5.00');
    expect(await page.textContent(cell('customer_id=acme', 'action'))).to.equal('warn');
    expect(await page.textContent(cell('customer_id=acme', 'period'))).to.include('UTC day');
    expect(await page.textContent(cell('customer_id=acme', 'alert'))).to.include('first alert at 50');

    // The search box keeps the budgets whose id, workspace or scope holds the text.
    await page.fill('#budget-search', 'acme');
    expect(
      await page.$$eval('#budgets tbody tr', (trs) => trs.map((tr) => (tr as HTMLElement).dataset.budget)),
    ).to.deep.equal([created]);
    await page.fill('#budget-search', '');
  });

  it('changes the budget: its limit and what happens at the limit, the rest kept', async () => {
    const page = suite.page;
    await page.click(`[data-edit="${created}"]`);
    expect(await page.textContent('#budget-editing'))
      .to.include(created)
      .and.include('customer_id=acme');
    expect(await page.inputValue('#budget-usd')).to.equal('5');
    await page.fill('#budget-usd', '7.50');
    await page.selectOption('#budget-on-exceed', 'block');
    await page.click('#budget-form button[type=submit]');
    await page.waitForSelector(`${cell('customer_id=acme', 'spend')}[data-limit="7.5"]`);
    expect(await page.textContent(cell('customer_id=acme', 'action'))).to.equal('block');
    const api = (await listed()).find((b) => b.id === created);
    expect(api).to.include({ scope: 'customer_id=acme', period: 'day', limit_usd: '7.5', action: 'block' });
    expect(api.alert_at).to.deep.equal([0.5, 0.8, 1]);
  });

  it('shows the freeze a real spike of requests made, and lifts it: the key is served again', async () => {
    const page = suite.page;
    for (let round = 0; round < 6; round++) await Promise.all(Array.from({ length: 8 }, () => chat(suite.gw, 'acme')));
    await waitFor(
      async () => (await adminGet(suite.gw, '/api/freezes')).data.length === 1,
      5000,
      'the spike froze the key',
    );
    const [freeze] = (await adminGet(suite.gw, '/api/freezes')).data;
    expect(freeze).to.include({ scope: 'key_id=test', state: 'active' });
    expect((await chat(suite.gw, 'acme')).code).to.equal('spend_anomaly_frozen');

    await openBudgets();
    const row = `#freezes tr[data-freeze="${freeze.id}"]`;
    expect(await page.textContent(row))
      .to.include('key_id = test')
      .and.include('key-loop');
    // Its alert, in the history once (whatever channels carried it).
    await waitFor(() => hook.taken.some((a) => a.kind === 'spend.anomaly'), 5000, 'the anomaly alert is delivered');
    await openBudgets();
    const alert = hook.taken.find((a) => a.kind === 'spend.anomaly');
    expect(await page.textContent(`#budget-alerts tr[data-alert="${alert.alert_id}"]`)).to.include('spend.anomaly');
    expect(await page.$$(`#budget-alerts tr[data-kind="spend.anomaly"]`)).to.have.length(1);
    await page.screenshot({ path: resultPath('dashboard-budgets.png'), fullPage: true });

    await page.click(`[data-lift="${freeze.id}"]`);
    await page.waitForSelector('#no-freezes');
    expect((await adminGet(suite.gw, '/api/freezes')).data).to.deep.equal([]);
    expect((await chat(suite.gw, 'acme')).status, 'the instance that lifted it serves the key at once').to.equal(200);
  });
});
