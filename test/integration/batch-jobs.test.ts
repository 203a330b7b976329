import Anthropic from '@anthropic-ai/sdk';
import { expect } from 'chai';
import OpenAI, { toFile } from 'openai';
import { request } from 'undici';
import { adminGet } from '../helpers/admin';
import { fixtureBytes } from '../helpers/fixtures';
import { ANTHROPIC_KEY, OPENAI_KEY, type TestGateway, useGateway } from '../helpers/gateway';
import { TestUpstream, type Reply } from '../helpers/upstream';

/**
 * Batch jobs through the gateway with the official SDKs (BUILT fixtures, see test/fixtures/SOURCES.md): files and
 * batches are forwarded as they are; the creation keeps its tags; results that pass through are priced line by line
 * at the batch rates, attributed to the creation, and counted once however often they are fetched.
 */
describe('batch jobs, counted once', () => {
  const upstream = new TestUpstream();
  let gw: TestGateway;
  // Priced by the bundled catalog: Anthropic's batch rates are its standard ones halved (pricing/price-corrections.json).
  useGateway(upstream, (g) => (gw = g));
  const TAGS = { agent: 'triage-bot', feature: 'nightly' };
  const metadata = { 'X-Gateway-Metadata': JSON.stringify(TAGS) };

  const json = (file: string): Reply => ({ headers: { 'content-type': 'application/json' }, body: fixtureBytes(file) });
  /** A JSON Lines body cut into pieces that end mid-line, as a provider's chunks may. */
  const jsonl = (file: string, type: string): Reply => {
    const bytes = fixtureBytes(file);
    const cuts = [0, 97, 600, 601, bytes.length - 3, bytes.length];
    return { headers: { 'content-type': type }, body: cuts.slice(1).map((end, i) => bytes.subarray(cuts[i], end)) };
  };

  /** The stored records of batch lines (their ids start with batch_). */
  async function batchRecords(): Promise<any[]> {
    const page = await adminGet(gw, '/api/requests?limit=1000');
    return page.data.filter((r: any) => String(r.id).startsWith('batch_'));
  }

  /** The records of `provider`'s batch lines once `count` are stored, read again after the writer (20 ms) had time for more. */
  async function settledLines(provider: string, count: number): Promise<any[]> {
    const deadline = Date.now() + 5000;
    while ((await batchRecords()).filter((r) => r.provider === provider).length < count && Date.now() < deadline)
      await new Promise((r) => setTimeout(r, 20));
    await new Promise((r) => setTimeout(r, 300));
    return (await batchRecords()).filter((r) => r.provider === provider);
  }

  it('OpenAI: upload, create, retrieve, output file fetched twice: two lines at the batch rates, $0.00048, once', async () => {
    upstream.respondWith((req) => {
      const path = req.url.split('?')[0];
      if (req.method === 'POST' && path === '/openai/v1/files') return json('openai/file_batch_input_built.json');
      if (req.method === 'POST' && path === '/openai/v1/batches') return json('openai/batch_created_built.json');
      if (path === '/openai/v1/batches/batch_6929f3a1c0de') return json('openai/batch_completed_built.json');
      if (path === '/openai/v1/files/file-out-9Xk4/content')
        return jsonl('openai/batch_output_built.jsonl', 'application/octet-stream');
      return { status: 404, headers: { 'content-type': 'application/json' }, body: Buffer.from('{}') };
    });
    const openai = new OpenAI({
      apiKey: OPENAI_KEY,
      baseURL: `${gw.url}/v1`,
      maxRetries: 0,
      defaultHeaders: { 'X-Gateway-Key': gw.key },
    });
    const input = '{"custom_id":"ticket-1","method":"POST","url":"/v1/chat/completions","body":{}}\n';
    const file = await openai.files.create({
      file: await toFile(Buffer.from(input), 'requests.jsonl'),
      purpose: 'batch',
    });
    const batch = await openai.batches.create(
      { input_file_id: file.id, endpoint: '/v1/chat/completions', completion_window: '24h' },
      { headers: metadata },
    );
    expect(batch.id).to.equal('batch_6929f3a1c0de');
    const done = await openai.batches.retrieve(batch.id);
    const expected = fixtureBytes('openai/batch_output_built.jsonl').toString('utf8');
    for (let i = 0; i < 2; i++)
      expect(await (await openai.files.content(done.output_file_id!)).text()).to.equal(expected);

    const paths = upstream.received.map((r) => `${r.method} ${r.url}`);
    expect(paths).to.deep.equal([
      'POST /openai/v1/files',
      'POST /openai/v1/batches',
      'GET /openai/v1/batches/batch_6929f3a1c0de',
      'GET /openai/v1/files/file-out-9Xk4/content',
      'GET /openai/v1/files/file-out-9Xk4/content',
    ]);
    expect(upstream.received[1].body.toString()).to.include('"input_file_id":"file-in-7Qb2"');
    // gpt-4o-mini at its batch rates ($0.075 / $0.30 per 1M): 1,200 x 0.075 + 300 x 0.30 and 2,000 x 0.075 + 500 x 0.30.
    const lines = await settledLines('openai', 2);
    expect(lines.map((r) => [r.cost_pico, r.input_tokens, r.output_tokens]).sort()).to.deep.equal([
      ['180000000', 1200, 300],
      ['300000000', 2000, 500],
    ]);
    for (const r of lines) {
      expect(r).to.include({ service_tier: 'batch', provenance: 'measured', endpoint: 'chat.completions' });
      expect(r.tags).to.deep.equal(TAGS);
      expect(r.price_id).to.equal('openai/gpt-4o-mini');
    }
  });

  it('Anthropic: create, retrieve, results through the gateway twice: two succeeded lines at the batch rates, once', async () => {
    upstream.respondWith((req) => {
      const path = req.url.split('?')[0];
      const id = 'msgbatch_01HkcTjaV5uDC8jWR4ZsDV8d';
      if (req.method === 'POST' && path === '/anthropic/v1/messages/batches')
        return json('anthropic/message_batch_created_built.json');
      if (path === `/anthropic/v1/messages/batches/${id}`) return json('anthropic/message_batch_ended_built.json');
      if (path === `/anthropic/v1/messages/batches/${id}/results`)
        return jsonl('anthropic/message_batch_results_built.jsonl', 'application/binary');
      return { status: 404, headers: { 'content-type': 'application/json' }, body: Buffer.from('{}') };
    });
    const anthropic = new Anthropic({
      apiKey: ANTHROPIC_KEY,
      baseURL: gw.url,
      maxRetries: 0,
      defaultHeaders: { 'X-Gateway-Key': gw.key },
    });
    const params = {
      model: 'claude-haiku-4-5',
      max_tokens: 64,
      messages: [{ role: 'user' as const, content: 'Sort.' }],
    };
    const batch = await anthropic.messages.batches.create(
      { requests: ['a', 'b', 'c', 'd'].map((x) => ({ custom_id: `ticket-${x}`, params })) },
      { headers: metadata },
    );
    const ended = await anthropic.messages.batches.retrieve(batch.id);
    expect(ended.processing_status).to.equal('ended');
    // The SDK's results() follows results_url, which the provider points at itself: those bytes would bypass the
    // gateway. Fetched at the gateway's own path, they pass through.
    const expected = fixtureBytes('anthropic/message_batch_results_built.jsonl');
    for (let i = 0; i < 2; i++) {
      const res = await request(`${gw.url}/v1/messages/batches/${batch.id}/results`, {
        headers: { 'x-api-key': ANTHROPIC_KEY, 'anthropic-version': '2023-06-01', 'x-gateway-key': gw.key },
      });
      expect(res.statusCode).to.equal(200);
      expect(Buffer.from(await res.body.arrayBuffer()).equals(expected)).to.equal(true);
    }

    const lines = await settledLines('anthropic', 2);
    // claude-haiku-4-5 at its bundled batch rates, $0.50 / $2.50 per 1M: 800 x 0.5 + 200 x 2.5 and 1,500 x 0.5 + 100 x 2.5; errored and expired lines bill nothing.
    expect(lines.map((r) => [r.cost_pico, r.input_tokens, r.output_tokens]).sort()).to.deep.equal([
      ['1000000000', 1500, 100],
      ['900000000', 800, 200],
    ]);
    for (const r of lines) {
      expect(r).to.include({ service_tier: 'batch', provenance: 'measured', endpoint: 'messages' });
      expect(r.tags).to.deep.equal(TAGS);
    }
  });

  it('results of a batch the gateway did not see created are passed on and left to reconciliation', async () => {
    upstream.respondWith(() => jsonl('openai/batch_output_built.jsonl', 'application/octet-stream'));
    const res = await request(`${gw.url}/v1/files/file-elsewhere/content`, {
      headers: { authorization: `Bearer ${OPENAI_KEY}`, 'x-gateway-key': gw.key },
    });
    expect(Buffer.from(await res.body.arrayBuffer()).equals(fixtureBytes('openai/batch_output_built.jsonl'))).to.equal(
      true,
    );
    await new Promise((r) => setTimeout(r, 300));
    expect(await batchRecords()).to.have.length(4); // the two batches' lines only
  });
});
