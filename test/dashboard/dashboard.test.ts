/**
 * The cost dashboard end to end: a real gateway (admin listener) in front of the recorded test upstream,
 * records seeded through real proxied requests, and the page driven in Debian's Chromium by playwright-core.
 * Screenshots go to test-results/ for people to look at.
 */
import { expect } from 'chai';
import { readFileSync } from 'node:fs';
import { request } from 'undici';
import type { UsageRecord } from '../../records/usage-record';
import { adminGet } from '../helpers/admin';
import { OPENAI_KEY, startTestGateway, TEST_ADMIN_TOKEN, type TestGateway, chatThrough } from '../helpers/gateway';
import { rememberSecret } from '../helpers/secret-scan';
import { TestUpstream } from '../helpers/upstream';
import { resultPath, useDashboard } from './browser';
import { seedThroughProxy } from './seed';

const SEEDED = 60;

/** Minimal RFC 4180 parser (quoted cells, CRLF). */
function parseCsv(text: string): string[][] {
  const rows: string[][] = [];
  let row: string[] = [];
  let cell = '';
  let quoted = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (quoted) {
      if (c === '"' && text[i + 1] === '"') ((cell += '"'), i++);
      else if (c === '"') quoted = false;
      else cell += c;
    } else if (c === '"') quoted = true;
    else if (c === ',') (row.push(cell), (cell = ''));
    else if (c === '\n') (row.push(cell), rows.push(row), (row = []), (cell = ''));
    else if (c !== '\r') cell += c;
  }
  if (cell || row.length) (row.push(cell), rows.push(row));
  return rows;
}

const NUMERIC = [
  'requests',
  'input_tokens',
  'output_tokens',
  'cache_read_tokens',
  'cache_write_tokens',
  'reasoning_tokens',
  'unpriced_count',
  'estimated_count',
  'error_count',
] as const;

describe('dashboard: static page on the admin listener', () => {
  const upstream = new TestUpstream();
  let gw: TestGateway;
  before(async () => {
    await upstream.start();
    gw = await startTestGateway(upstream.url);
  });
  after(async () => {
    await gw?.stop();
    await upstream.stop();
  });

  it('serves the page and its assets without the token (no data in them), with a strict CSP; the API still needs the token', async () => {
    const page = await request(`${gw.adminUrl}/`);
    const html = await page.body.text();
    expect(page.statusCode).to.equal(200);
    expect(page.headers['content-type']).to.match(/^text\/html/);
    expect(String(page.headers['content-security-policy']))
      .to.include("script-src 'self'")
      .and.include("connect-src 'self'");
    expect(html).to.include('assets/main.js').and.include('assets/chart.umd.min.js');
    expect(html).to.not.match(/https?:\/\//, 'no third-party (CDN) URL in the page');
    for (const asset of ['/assets/main.js', '/assets/style.css', '/assets/chart.umd.min.js']) {
      const res = await request(`${gw.adminUrl}${asset}`, { headers: { 'accept-encoding': 'gzip' } });
      await res.body.arrayBuffer();
      expect(res.statusCode, asset).to.equal(200);
      expect(res.headers['content-encoding'], asset).to.equal('gzip');
      const again = await request(`${gw.adminUrl}${asset}`, { headers: { 'if-none-match': String(res.headers.etag) } });
      await again.body.text();
      expect(again.statusCode, `${asset} revalidated`).to.equal(304);
    }
    const missing = await request(`${gw.adminUrl}/assets/nope.js`);
    await missing.body.text();
    expect(missing.statusCode).to.equal(404);
    for (const path of ['/api/usage', '/api/dimensions', '/api/info', '/api/usage.csv?group_by=agent']) {
      const res = await request(`${gw.adminUrl}${path}`);
      await res.body.text();
      expect(res.statusCode, path).to.equal(401);
    }
    // The proxy listener never serves the dashboard.
    const proxy = await request(`${gw.url}/`);
    await proxy.body.text();
    expect(proxy.statusCode).to.not.equal(200);
  });
});

describe('dashboard in a real browser (Chromium, playwright-core)', function () {
  const urls: string[] = [];
  const pageErrors: string[] = [];

  const suite = useDashboard({
    seed: async (gw) => {
      await seedThroughProxy(gw, SEEDED);
    },
    viewport: { width: 1440, height: 1000 },
    context: { acceptDownloads: true },
    prepare: async ({ context, gw, page }) => {
      await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: gw.adminUrl! });
      page.on('request', (r) => urls.push(r.url()));
      page.on('pageerror', (err) => pageErrors.push(err.message));
    },
    signIn: false,
  });

  const ready = (view: string) =>
    suite.page.waitForSelector(`#view[data-view="${view}"][data-ready="true"]`, { timeout: 10_000 });
  const range = async () => ({
    from: await suite.page.getAttribute('#view', 'data-from'),
    to: await suite.page.getAttribute('#view', 'data-to'),
  });
  const filterQuery = (filters: Record<string, string>) =>
    Object.entries(filters)
      .map(([k, v]) => `&filter[${k}]=${encodeURIComponent(v)}`)
      .join('');

  /** The page's table (and totals and cards) against GET /api/usage with the same range and filters. */
  async function expectPageEqualsApi(groupBy: string, filters: Record<string, string> = {}) {
    await ready('usage');
    expect(await suite.page.getAttribute('#view', 'data-group-by')).to.equal(groupBy);
    const { from, to } = await range();
    const api = await adminGet(suite.gw, `/api/usage?group_by=${groupBy}&from=${from}&to=${to}${filterQuery(filters)}`);
    const rows = await suite.page.$$eval('#groups tbody tr', (trs) =>
      trs.map((tr) =>
        Object.fromEntries([...tr.querySelectorAll('td')].map((td) => [td.dataset.col, td.dataset.value])),
      ),
    );
    expect(rows.length, 'one table row per API group').to.equal(api.rows.length);
    for (const row of api.rows) {
      const shown = rows.find((r) => r.group === (row.group[groupBy] ?? '(none)'));
      expect(shown, `row ${row.group[groupBy]}`).to.not.equal(undefined);
      // An unknown cost (every request of the group unpriced) is null in the API and an empty cell, never 0.
      expect(shown!.cost_usd).to.equal(row.cost_usd ?? '');
      expect(row.cost_status === 'unknown').to.equal(row.cost_usd === null);
      for (const k of NUMERIC) expect(shown![k], `${row.group[groupBy]} ${k}`).to.equal(String(row[k]));
    }
    const card = (m: string) => suite.page.getAttribute(`#overview .card[data-metric="${m}"]`, 'data-value');
    expect(await card('cost')).to.equal(api.total.cost_usd ?? '');
    expect(await card('requests')).to.equal(String(api.total.requests));
    expect(await card('input_tokens')).to.equal(String(api.total.input_tokens));
    expect(await card('output_tokens')).to.equal(String(api.total.output_tokens));
    expect(await suite.page.getAttribute('#overview .card[data-metric="flagged"]', 'data-estimated')).to.equal(
      String(api.total.estimated_count),
    );
    expect(await suite.page.getAttribute('#overview .card[data-metric="flagged"]', 'data-unpriced')).to.equal(
      String(api.total.unpriced_count),
    );
    expect(await suite.page.getAttribute('#groups tfoot td[data-col="cost_usd"]', 'data-value')).to.equal(
      api.total.cost_usd ?? '',
    );
    // The chart has one series per group (up to 8, then "other").
    const series = JSON.parse((await suite.page.getAttribute('.chart-box', 'data-series')) ?? '[]') as string[];
    expect(series.length).to.equal(api.rows.length <= 9 ? api.rows.length : 9);
    // The chart's stacks add up to the table: each shown group's series, "other" and the total.
    const interval = Number(to) - Number(from) <= 3 * 24 * 3600_000 ? 'hour' : 'day';
    const values = series
      .filter((v) => v !== 'other')
      .map((v) => `&value=${encodeURIComponent(v)}`)
      .join('');
    const stacks = await adminGet(
      suite.gw,
      `/api/usage/series?group_by=${groupBy}&from=${from}&to=${to}&interval=${interval}${filterQuery(filters)}${values}`,
    );
    const sum = (xs: string[]) => xs.reduce((a, x) => a + BigInt(x), 0n);
    // The chart stacks known costs: a group whose cost is unknown adds nothing to them.
    for (const s of stacks.series)
      expect(String(sum(s.cost_pico)), `series ${s.group}`).to.equal(
        api.rows.find((r: any) => (r.group[groupBy] ?? '(none)') === s.group).cost_pico ?? '0',
      );
    expect(String(sum(stacks.total.cost_pico))).to.equal(api.total.cost_pico ?? '0');
    expect(
      sum(stacks.other.cost_pico) + stacks.series.reduce((a: bigint, s: any) => a + sum(s.cost_pico), 0n),
    ).to.equal(BigInt(api.total.cost_pico ?? '0'));
    return api;
  }

  it('signs in with the admin token, kept in sessionStorage and never in a URL', async () => {
    await suite.page.goto(`${suite.gw.adminUrl}/`);
    await suite.page.waitForSelector('#login');
    await suite.page.screenshot({ path: resultPath('dashboard-login.png') });
    await suite.page.fill('#token', 'not-the-admin-token');
    await suite.page.click('#login button[type=submit]');
    await suite.page.waitForFunction(() => document.querySelector('#login-error')?.textContent?.includes('refused'));
    await suite.page.fill('#token', TEST_ADMIN_TOKEN);
    await suite.page.click('#login button[type=submit]');
    await ready('usage');
    expect(await suite.page.evaluate(() => sessionStorage.getItem('tollgate.adminToken'))).to.equal(TEST_ADMIN_TOKEN);
    expect(await suite.page.evaluate(() => localStorage.length)).to.equal(0);
    expect(await suite.page.evaluate(() => document.cookie)).to.equal('');
    expect(suite.page.url()).to.not.include(TEST_ADMIN_TOKEN);
    // A reload stays signed in (same tab session).
    await suite.page.reload();
    await ready('usage');
  });

  it('shows the overview, the chart and the table grouped by agent: the same numbers as the admin API', async () => {
    const api = await expectPageEqualsApi('agent');
    expect(api.total.requests).to.equal(SEEDED);
    expect(api.total.unpriced_count).to.be.greaterThan(0);
    expect(api.total.estimated_count).to.be.greaterThan(0);
    // The y-axis labels share one precision (never "$0.005000" next to "$0.0500"), and the top one is a real cost.
    const ticks = await suite.page.evaluate(
      () =>
        (window as any).Chart.getChart(document.querySelector('#cost-chart')).scales.y.ticks.map(
          (t: { label: string }) => t.label,
        ) as string[],
    );
    expect(ticks.length, JSON.stringify(ticks)).to.be.at.least(3);
    const decimals = ticks.map((t) => /^\$[\d,]+\.(\d+)$/.exec(t)?.[1].length);
    expect(
      decimals.every((d) => d !== undefined && d === decimals[0]),
      `one precision on the y axis: ${JSON.stringify(ticks)}`,
    ).to.equal(true);
    expect(ticks[0], 'the axis starts at zero').to.match(/^\$0\.0+$/);
    await suite.page.screenshot({ path: resultPath('dashboard-usage.png'), fullPage: true });
  });

  it('lists agent, feature, customer_id, provider, model and every other tag key in the group-by picker; switching re-groups', async () => {
    const options = await suite.page.$$eval('#group-by option', (os) => os.map((o) => (o as HTMLOptionElement).value));
    expect(options.slice(0, 5)).to.deep.equal(['agent', 'feature', 'customer_id', 'provider', 'model']);
    expect(options).to.include('team');
    const dims = await adminGet(suite.gw, '/api/dimensions');
    expect(dims.tags).to.deep.equal(['agent', 'customer_id', 'feature', 'team']);
    await suite.page.selectOption('#group-by', 'model');
    const api = await expectPageEqualsApi('model');
    expect(api.rows.map((r: any) => r.group.model)).to.include.members([
      'gpt-4o-mini',
      'gpt-4o',
      'claude-sonnet-4-5',
      'codestral-nobody-priced-this',
    ]);
    // The unpriced model's cost is unknown: shown as "—", never $0.
    expect(api.rows.find((r: any) => r.group.model === 'codestral-nobody-priced-this').cost_usd).to.equal(null);
    expect(
      await suite.page.textContent(
        '#groups tbody tr[data-group="codestral-nobody-priced-this"] td[data-col="cost_usd"]',
      ),
    ).to.equal('—');
    // Sorting by a column reorders the table.
    await suite.page.click('#groups th[data-col="requests"] button');
    const requests = await suite.page.$$eval('#groups tbody td[data-col="requests"]', (tds) =>
      tds.map((td) => Number((td as HTMLElement).dataset.value)),
    );
    expect(requests).to.deep.equal([...requests].sort((a, b) => b - a));
    await suite.page.click('#groups th[data-col="requests"] button');
    const asc = await suite.page.$$eval('#groups tbody td[data-col="requests"]', (tds) =>
      tds.map((td) => Number((td as HTMLElement).dataset.value)),
    );
    expect(asc).to.deep.equal([...asc].sort((a, b) => a - b));
  });

  it('clicking a group filters by it and filters stack (customer_id=acme, then by feature)', async () => {
    await suite.page.selectOption('#group-by', 'customer_id');
    await expectPageEqualsApi('customer_id');
    await suite.page.click('#groups tbody tr[data-group="acme"]');
    await ready('usage');
    expect(
      await suite.page.$$eval('.chip', (cs) =>
        cs.map((c) => `${(c as HTMLElement).dataset.filter}=${(c as HTMLElement).dataset.value}`),
      ),
    ).to.deep.equal(['customer_id=acme']);
    await suite.page.selectOption('#group-by', 'feature');
    const api = await expectPageEqualsApi('feature', { customer_id: 'acme' });
    expect(api.total.requests).to.equal(SEEDED / 5);
    const feature = api.rows[0].group.feature as string;
    await suite.page.click(`#groups tbody tr[data-group="${feature}"]`);
    await ready('usage');
    expect(await suite.page.$$eval('.chip', (cs) => cs.length)).to.equal(2);
    const next = (await suite.page.getAttribute('#view', 'data-group-by'))!;
    await expectPageEqualsApi(next, { customer_id: 'acme', feature });
    await suite.page.screenshot({ path: resultPath('dashboard-filtered.png'), fullPage: true });
    // Removing the second filter keeps the first.
    await suite.page.click('.chip[data-filter="feature"] .chip-x');
    await ready('usage');
    expect(await suite.page.$$eval('.chip', (cs) => cs.map((c) => (c as HTMLElement).dataset.filter))).to.deep.equal([
      'customer_id',
    ]);
  });

  it('exports the grouping as CSV with the same numbers as the table', async () => {
    await suite.page.selectOption('#group-by', 'agent');
    await ready('usage');
    const [download] = await Promise.all([suite.page.waitForEvent('download'), suite.page.click('#export-csv')]);
    const csv = parseCsv(readFileSync(await download.path(), 'utf8'));
    const day = (ms: string | null) => new Date(Number(ms)).toISOString().slice(0, 10);
    const shown = await range();
    expect(download.suggestedFilename()).to.equal(
      `usage-agent-${day(shown.from)}-to-${day(String(Number(shown.to) - 1))}.csv`,
    );
    const [header, ...lines] = csv;
    expect(header[0]).to.equal('agent');
    const table = await suite.page.$$eval('#groups tbody tr', (trs) =>
      trs.map((tr) =>
        Object.fromEntries([...tr.querySelectorAll('td')].map((td) => [td.dataset.col, td.dataset.value])),
      ),
    );
    expect(lines.length).to.equal(table.length);
    const shownCols = Object.keys(table[0]).filter((c) => c !== 'group');
    expect(shownCols).to.include.members(['requests', 'input_tokens', 'output_tokens', 'cost_usd', 'cost_share_pct']);
    for (const line of lines) {
      const cells = Object.fromEntries(header.map((h, i) => [h, line[i]]));
      const row = table.find((r) => r.group === cells.agent);
      expect(row, `CSV group ${cells.agent}`).to.not.equal(undefined);
      for (const c of shownCols) expect(cells[c], `${cells.agent} ${c}`).to.equal(row![c]);
    }
    const shares = lines.map((l) => Number(l[header.indexOf('cost_share_pct')]));
    expect(shares.reduce((a, b) => a + b, 0)).to.be.closeTo(100, 0.02);
    // The range and the filters travel with the numbers: the last columns of every line.
    expect(header.slice(-3)).to.deep.equal(['range_from', 'range_to', 'filter[customer_id]']);
    const scope = [new Date(Number(shown.from)).toISOString(), new Date(Number(shown.to)).toISOString(), 'acme'];
    for (const line of lines) expect(line.slice(-3)).to.deep.equal(scope);
    // And the server-side CSV is scriptable with the same parameters as /api/usage.
    const { from, to } = await range();
    const res = await request(
      `${suite.gw.adminUrl}/api/usage.csv?group_by=agent&from=${from}&to=${to}&filter[customer_id]=acme`,
      { headers: { authorization: `Bearer ${TEST_ADMIN_TOKEN}` } },
    );
    expect(res.statusCode).to.equal(200);
    expect(res.headers['content-type']).to.match(/^text\/csv/);
    expect(parseCsv(await res.body.text())).to.deep.equal(csv);
  });

  it('lists the latest requests with tags, model, status, latency, tokens and cost; pageable, filterable; unpriced and estimated marked', async () => {
    await suite.page.click('.chip[data-filter="customer_id"] .chip-x');
    await ready('usage');
    await suite.page.click('a[data-view="requests"]');
    await ready('requests');
    const { from, to } = await range();
    const first = await adminGet(suite.gw, `/api/requests?limit=50&from=${from}&to=${to}`);
    const ids = await suite.page.$$eval('#requests tbody tr', (trs) => trs.map((tr) => (tr as HTMLElement).dataset.id));
    expect(ids).to.deep.equal(first.data.map((r: any) => r.id));
    const marked = await suite.page.$$eval('#requests tbody tr', (trs) =>
      trs.map((tr) => [(tr as HTMLElement).dataset.provenance, tr.querySelector('.badge')?.textContent ?? null]),
    );
    for (const [provenance, badge] of marked) {
      if (provenance === 'unpriced' || provenance === 'estimated') expect(badge).to.equal(provenance);
      if (provenance === 'measured') expect(badge).to.equal(null);
    }
    expect(marked.some(([p]) => p === 'unpriced')).to.equal(true);
    expect(marked.some(([p]) => p === 'estimated')).to.equal(true);
    const firstRow = first.data[0];
    const text = await suite.page.textContent(`#requests tr[data-id="${firstRow.id}"]`);
    expect(text).to.include(firstRow.model).and.include(String(firstRow.status)).and.include(firstRow.tags.agent);
    await suite.page.screenshot({ path: resultPath('dashboard-requests.png') });

    // Paging: the second suite.page is the API's second suite.page; back to the first.
    await suite.page.click('#page-older');
    await ready('requests');
    const second = await adminGet(suite.gw, `/api/requests?limit=50&from=${from}&to=${to}&cursor=${first.next_cursor}`);
    expect(
      await suite.page.$$eval('#requests tbody tr', (trs) => trs.map((tr) => (tr as HTMLElement).dataset.id)),
    ).to.deep.equal(second.data.map((r: any) => r.id));
    expect(second.data.length).to.equal(SEEDED - 50);
    expect(await suite.page.isDisabled('#page-older')).to.equal(true);
    await suite.page.click('#page-newer');
    await ready('requests');
    expect(await suite.page.$$eval('#requests tbody tr', (trs) => trs.length)).to.equal(50);

    // Clicking a tag filters by it.
    await suite.page.click('#requests tbody tr:first-child .tag[data-tag="customer_id"]');
    await ready('requests');
    const value = await suite.page.getAttribute('.chip[data-filter="customer_id"]', 'data-value');
    const filtered = await adminGet(
      suite.gw,
      `/api/requests?limit=50&from=${from}&to=${to}&filter[customer_id]=${value}`,
    );
    const shown = await suite.page.$$eval('#requests tbody tr', (trs) =>
      trs.map((tr) => (tr as HTMLElement).dataset.id),
    );
    expect(shown).to.deep.equal(filtered.data.map((r: any) => r.id));
    expect(shown.length).to.equal(SEEDED / 5);
    await suite.page.click('.chip[data-filter="customer_id"] .chip-x');
    await ready('requests');
  });

  it('creates an API key (shown once, copyable) that works through the proxy, and revokes it', async () => {
    await suite.page.click('a[data-view="keys"]');
    await ready('keys');
    await suite.page.fill('#key-label', 'e2e dashboard key');
    await suite.page.click('#create-key button[type=submit]');
    await suite.page.waitForSelector('#new-key');
    await ready('keys');
    const key = await suite.page.inputValue('#new-key');
    expect(key).to.match(/^tg_/);
    rememberSecret(key, 'a key created in the dashboard');
    const id = (await suite.page.getAttribute('.new-key', 'data-key-id'))!;
    await suite.page.click('#copy-key');
    await suite.page.waitForFunction(() => document.querySelector('#copy-status')?.textContent === 'Copied');
    expect(await suite.page.evaluate(() => navigator.clipboard.readText())).to.equal(key);
    const listed = await adminGet(suite.gw, '/api/keys');
    const entry = listed.data.find((k: any) => k.id === id);
    expect(entry).to.include({ label: 'e2e dashboard key', revoked: false });
    expect(JSON.stringify(listed)).to.not.include(key);
    expect(await suite.page.textContent(`#keys tr[data-key-id="${id}"]`))
      .to.include('e2e dashboard key')
      .and.include('active');
    await suite.page.screenshot({ path: resultPath('dashboard-keys.png') });

    const call = async () => {
      const res = await request(`${suite.gw.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-gateway-key': key, authorization: `Bearer ${OPENAI_KEY}` },
        body: JSON.stringify({ model: 'gpt-4o-mini', messages: [] }),
      });
      await res.body.text();
      return res.statusCode;
    };
    expect(await call(), 'the new key works through the proxy').to.equal(200);

    // Leaving the suite.page drops the shown key: it is never shown again.
    await suite.page.click('a[data-view="usage"]');
    await ready('usage');
    await suite.page.click('a[data-view="keys"]');
    await ready('keys');
    expect(await suite.page.$('.new-key'), 'the key banner after navigating away and back').to.equal(null);
    expect(await suite.page.content(), 'the plain key anywhere in the page').to.not.include(key);
    expect(await suite.page.textContent(`#keys tr[data-key-id="${id}"]`), 'the key is still listed').to.include(
      'e2e dashboard key',
    );
    const revoke = `#keys button[data-revoke="${id}"]`;
    await suite.page.click(revoke);
    expect(await suite.page.textContent(revoke)).to.equal('Confirm revoke');
    await suite.page.click(revoke);
    await suite.page.waitForSelector(`#keys tr[data-key-id="${id}"][data-revoked="true"]`);
    expect((await adminGet(suite.gw, '/api/keys')).data.find((k: any) => k.id === id).revoked).to.equal(true);
    expect(await call(), 'a revoked key is refused').to.equal(401);

    // A key revoked while it is still shown: the banner goes with it.
    await suite.page.fill('#key-label', 'revoked at once');
    await suite.page.click('#create-key button[type=submit]');
    await suite.page.waitForSelector('#new-key');
    await ready('keys');
    const second = await suite.page.inputValue('#new-key');
    rememberSecret(second, 'a key created in the dashboard');
    const secondId = (await suite.page.getAttribute('.new-key', 'data-key-id'))!;
    await suite.page.click(`#keys button[data-revoke="${secondId}"]`);
    await suite.page.click(`#keys button[data-revoke="${secondId}"]`);
    await suite.page.waitForSelector(`#keys tr[data-key-id="${secondId}"][data-revoked="true"]`);
    await ready('keys');
    expect(await suite.page.$('.new-key'), 'the banner of a revoked key').to.equal(null);
    expect(await suite.page.content()).to.not.include(second);
  });

  it('lists the keys declared in gateway.config.yaml too, read-only and marked "from config", without key or hash', async () => {
    const listed = await adminGet(suite.gw, '/api/keys');
    const declared = listed.data.filter((k: any) => k.source === 'config');
    // The test gateway declares one key, { id: test, key: ${GATEWAY_KEY} } in workspace default.
    expect(declared).to.deep.equal([
      {
        id: 'test',
        workspace: 'default',
        label: '',
        created_at: null,
        last_used_at: null,
        revoked: false,
        revoked_at: null,
        source: 'config',
      },
    ]);
    expect(listed.data.filter((k: any) => k.source !== 'config').every((k: any) => k.source === 'store')).to.equal(
      true,
    );
    for (const k of listed.data) expect(k).to.not.have.any.keys('hash', 'key', 'sha256');
    // It carries the seeded traffic: its id is the records' key_id.
    const byKey = await adminGet(suite.gw, '/api/usage?group_by=key_id');
    expect(byKey.rows.find((r: any) => r.group.key_id === 'test')?.requests).to.be.at.least(SEEDED);

    await suite.page.click('a[data-view="usage"]');
    await ready('usage');
    await suite.page.click('a[data-view="keys"]');
    await ready('keys');
    const row = '#keys tr[data-key-id="test"]';
    expect(await suite.page.getAttribute(row, 'data-source')).to.equal('config');
    const cells = await suite.page.$$eval(`${row} td`, (tds) => tds.map((td) => td.textContent));
    expect(cells).to.deep.equal(['(no label)', 'test', 'default', '—', '—', 'from config', '']);
    expect(await suite.page.$(`${row} button`), 'no revoke button on a key from the config file').to.equal(null);
    // Listed after the keys created here.
    const order = await suite.page.$$eval('#keys tbody tr', (trs) =>
      trs.map((tr) => (tr as HTMLElement).dataset.source ?? 'store'),
    );
    expect(order.at(-1)).to.equal('config');
    expect(order.filter((s) => s === 'store').length).to.equal(listed.data.length - 1);
  });

  it('beyond 100 groups the table shows the 100 most expensive and one line summing the others, as the API answers them', async () => {
    // 105 values of a tag, a dollar each and the later ones a pico-dollar dearer: s-005 to s-104 make the suite.page, s-000 to
    // s-004 go to "other" with the seeded records, which carry no such tag (the cheaper "(untagged)" group).
    const now = Date.now();
    await suite.gw.gateway.store.insertBatch(
      Array.from(
        { length: 105 },
        (_, i) =>
          ({
            id: `shard-${now}-${i}`,
            ts: now - 60_000 - i,
            workspaceId: 'default',
            keyId: 'test',
            provider: 'openai',
            model: 'gpt-4o-mini',
            servedModel: 'gpt-4o-mini',
            endpoint: 'chat.completions',
            status: 200,
            streamed: false,
            inputTokens: 3,
            outputTokens: 2,
            cacheReadTokens: 0,
            cacheWriteTokens: 0,
            cacheWrite1hTokens: null,
            reasoningTokens: null,
            citationTokens: null,
            searchQueries: null,
            costPico: 1_000_000_000_000n + BigInt(i),
            provenance: 'measured',
            priceVersion: null,
            latencyMs: 5,
            ttfbMs: 2,
            tags: { shard: `s-${String(i).padStart(3, '0')}` },
            errorCode: null,
          }) satisfies UsageRecord,
      ),
    );
    await suite.page.click('a[data-view="usage"]');
    await suite.page.reload(); // the group-by picker and the range are read again
    await ready('usage');
    await suite.page.selectOption('#group-by', 'shard');
    await ready('usage');
    const { from, to } = await range();
    const api = await adminGet(suite.gw, `/api/usage?group_by=shard&from=${from}&to=${to}`);
    const top = Array.from({ length: 100 }, (_, i) => `s-${String(i + 5).padStart(3, '0')}`);
    expect(api.rows.map((r: any) => r.group.shard).sort()).to.deep.equal(top);
    expect(api.rows.map((r: any) => r.cost_pico).sort()).to.deep.equal(
      top.map((v) => String(1_000_000_000_000n + BigInt(Number(v.slice(2))))).sort(),
    );
    expect(api.other.groups).to.equal(6);
    expect(BigInt(api.other.cost_pico) > 5_000_000_000_000n, 'other holds the five cheapest values').to.equal(true);
    const shown = await suite.page.$$eval('#groups tbody tr', (trs) =>
      trs.map((tr) => (tr as HTMLElement).dataset.group),
    );
    expect(shown.slice(0, 100).sort()).to.deep.equal(top);
    expect(shown.slice(100)).to.deep.equal(['(other)']);
    const other = '#groups tbody tr.other';
    expect(await suite.page.getAttribute(other, 'data-groups')).to.equal('6');
    expect(await suite.page.getAttribute(`${other} td[data-col="requests"]`, 'data-value')).to.equal(
      String(api.other.requests),
    );
    expect(await suite.page.getAttribute(`${other} td[data-col="cost_usd"]`, 'data-value')).to.equal(
      api.other.cost_usd,
    );
    expect(await suite.page.textContent(other)).to.include('6 other groups');
    expect(
      await suite.page.$$eval('.panel-head h2', (hs) => hs.map((h) => h.textContent ?? '').join(' | ')),
    ).to.include('106 groups by shard (the 100 most expensive, then the others together)');
  });

  it('in the requests view, a tag named like a built-in dimension filters on tag:<key>, not on the built-in', async () => {
    // Older records (or a plugin) may carry a tag named "model"; attribution refuses such keys from clients now.
    const id = `zz-shadow-${Date.now()}`;
    await suite.gw.gateway.store.insertBatch([
      {
        id,
        ts: Date.now() - 1000,
        workspaceId: 'default',
        keyId: 'test',
        provider: 'openai',
        model: 'gpt-4o-mini',
        servedModel: 'gpt-4o-mini',
        endpoint: 'chat.completions',
        status: 200,
        streamed: false,
        inputTokens: 3,
        outputTokens: 2,
        cacheReadTokens: 0,
        cacheWriteTokens: 0,
        cacheWrite1hTokens: null,
        reasoningTokens: null,
        citationTokens: null,
        searchQueries: null,
        costPico: 1_000_000n,
        provenance: 'measured',
        priceVersion: null,
        latencyMs: 5,
        ttfbMs: 2,
        tags: { model: 'shadow-model' },
        errorCode: null,
      } satisfies UsageRecord,
    ]);
    await suite.page.click('a[data-view="requests"]');
    await suite.page.reload(); // the requests view keeps the range it resolved first: a reload takes in the new record
    await ready('requests');
    const tag = `#requests tr[data-id="${id}"] .tag[data-tag="model"]`;
    await suite.page.waitForSelector(tag);
    await suite.page.click(tag);
    await ready('requests');
    expect(
      await suite.page.$$eval('.chip', (cs) =>
        cs.map((c) => `${(c as HTMLElement).dataset.filter}=${(c as HTMLElement).dataset.value}`),
      ),
    ).to.deep.equal(['tag:model=shadow-model']);
    const { from, to } = await range();
    const api = await adminGet(
      suite.gw,
      `/api/requests?limit=50&from=${from}&to=${to}&filter[${encodeURIComponent('tag:model')}]=shadow-model`,
    );
    expect(api.data.map((r: any) => r.id)).to.deep.equal([id]);
    expect(
      await suite.page.$$eval('#requests tbody tr', (trs) => trs.map((tr) => (tr as HTMLElement).dataset.id)),
    ).to.deep.equal([id]);
    await suite.page.click('.chip .chip-x');
    await ready('requests');
  });

  it('made every request to the admin origin only, never with the token in a URL; no script error', () => {
    expect(pageErrors).to.deep.equal([]);
    expect(urls.length).to.be.greaterThan(10);
    for (const u of urls) {
      if (u.startsWith('blob:')) continue;
      expect(new URL(u).origin, u).to.equal(suite.gw.adminUrl);
      expect(u).to.not.include(TEST_ADMIN_TOKEN);
    }
  });

  it('shows a new user how to send the first request instead of a blank page', async () => {
    const fresh = await startTestGateway(suite.upstream.url);
    try {
      const p = await suite.context.newPage();
      await p.goto(`${fresh.adminUrl}/`);
      await p.fill('#token', TEST_ADMIN_TOKEN);
      await p.click('#login button[type=submit]');
      await p.waitForSelector('#empty-state');
      const text = (await p.textContent('#empty-state'))!;
      expect(text).to.include(`${fresh.url}/v1`).and.include('X-Gateway-Key').and.include('X-Gateway-Metadata');
      await p.screenshot({ path: resultPath('dashboard-empty.png') });
      // After a first request, "Check again" shows the data.
      const res = await chatThrough(fresh, { 'x-gateway-metadata-agent': 'first' }, { messages: [] });
      await res.body.text();
      await adminGetUntil(fresh);
      await p.click('#empty-state button');
      await p.waitForSelector('#groups tbody tr[data-group="first"]');
      await p.close();
    } finally {
      await fresh.stop();
    }
  });
});

async function adminGetUntil(gw: TestGateway): Promise<void> {
  for (let i = 0; i < 200; i++) {
    if ((await adminGet(gw, '/api/info')).has_records) return;
    await new Promise((r) => setTimeout(r, 20));
  }
  throw new Error('the first record was never stored');
}
