import { expect } from 'chai';
import OpenAI from 'openai';
import { request } from 'undici';
import { adminGet } from '../helpers/admin';
import { csvRows } from '../helpers/csv';
import { OPENAI_KEY, TEST_ADMIN_TOKEN, useGateway, type TestGateway } from '../helpers/gateway';
import { TestUpstream } from '../helpers/upstream';
import { waitFor } from '../helpers/wait';

/**
 * Each documented rule on attribution tags, broken on its own through the official SDK: the gateway refuses it
 * with invalid_metadata before anything reaches the provider, and what it does accept cannot turn into a formula
 * in the CSV export.
 */
describe('attribution tag rules, one broken at a time', () => {
  const upstream = new TestUpstream();
  let gw: TestGateway;
  useGateway(upstream, (g) => (gw = g));

  const chat = (headers: Record<string, string>) =>
    new OpenAI({
      apiKey: OPENAI_KEY,
      baseURL: `${gw.url}/v1`,
      maxRetries: 0,
      defaultHeaders: { 'X-Gateway-Key': gw.key, ...headers },
    }).chat.completions.create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] });

  /** The gateway's refusal of a request carrying `headers`: status, code and message. */
  async function refusal(headers: Record<string, string>): Promise<{ status: number; code: string; message: string }> {
    const err = await chat(headers).then(
      () => expect.fail('the request was admitted'),
      (e: unknown) => e as InstanceType<typeof OpenAI.APIError>,
    );
    expect(upstream.received, 'nothing reaches the provider').to.have.length(0);
    return { status: err.status!, code: err.code!, message: err.message };
  }

  it('a control character in a JSON tag value is refused', async () => {
    const r = await refusal({ 'X-Gateway-Metadata': JSON.stringify({ team: 'search\u0007ops' }) });
    expect(r.status).to.equal(400);
    expect(r.code).to.equal('invalid_metadata');
    expect(r.message).to.include('Tag "team" in X-Gateway-Metadata contains control characters.');
  });

  it('a tab in a flat tag header value is refused', async () => {
    const r = await refusal({ 'X-Gateway-Metadata-Team': 'search\tops' });
    expect([r.status, r.code]).to.deep.equal([400, 'invalid_metadata']);
    expect(r.message).to.include('contains control characters');
  });

  for (const [form, headers] of [
    ['JSON', { 'X-Gateway-Metadata': JSON.stringify({ 'gateway.max_tokens_applied': '1' }) }],
    ['flat header', { 'X-Gateway-Metadata-Gateway.Max_tokens_applied': '1' }],
  ] as const) {
    it(`a client cannot forge a gateway.* tag (${form})`, async () => {
      const r = await refusal(headers);
      expect([r.status, r.code]).to.deep.equal([400, 'invalid_metadata']);
      expect(r.message).to.include('keys starting with "gateway." are set by the gateway itself');
    });
  }

  it('a tag value a spreadsheet would run as a formula is stored as sent and exported with a leading apostrophe', async () => {
    const values = ['=HYPERLINK("http://evil.example","x")', '+1+1', '-2', '@SUM(A1)'];
    for (const customer of values) await chat({ 'X-Gateway-Metadata-Customer': customer });
    // The refusals of the tests above are recorded too, untagged: wait for these four, not for any four records.
    const customers = async () =>
      ((await adminGet(gw, '/api/usage?group_by=customer')).rows as { group: { customer: string } }[]).map(
        (r) => r.group.customer,
      );
    await waitFor(
      async () => {
        const stored = await customers();
        return values.every((v) => stored.includes(v));
      },
      5000,
      'the four tagged records',
    );

    const csv = await request(`${gw.adminUrl}/api/usage.csv?group_by=customer`, {
      headers: { authorization: `Bearer ${TEST_ADMIN_TOKEN}` },
    });
    const firstCells = csvRows(await csv.body.text())
      .slice(1)
      .map((row) => row[0]);
    expect(firstCells).to.include.members(values.map((v) => `'${v}`));
    expect(firstCells.filter((cell) => /^[=+\-@]/.test(cell))).to.deep.equal([]);
  });
});
