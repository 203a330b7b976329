/**
 * Bounds at the edge: a model name over 256 characters is refused (400 invalid_model) before anything is logged or
 * stored; no client value is echoed whole in an error; a provider's overlong text is stored cut, with a marker; and a
 * request at every default bound fits the PostgreSQL store (its rollup keys stay under the B-tree limit).
 */
import { randomBytes } from 'node:crypto';
import { expect } from 'chai';
import { Client } from 'pg';
import { request } from 'undici';
import { TEST_ADMIN_TOKEN, type TestGateway } from '../helpers/gateway';
import { FaultyUpstream } from '../helpers/faulty-upstream';
import { fixtureBytes } from '../helpers/fixtures';
import { recordFigures } from '../helpers/figures';
import {
  admin,
  call,
  chatBody,
  expectGatewayError,
  expectNoSecrets,
  jsonHeaders,
  recordsFor,
  startGateway,
} from '../helpers/reliability';
import { requirePostgres } from '../helpers/services';

const JSON_TYPE = { 'content-type': 'application/json' };
/** OpenRouter's recorded answer with its `model` (the model that served) replaced. */
const openrouterAnswer = (model: string) => {
  const body = JSON.parse(fixtureBytes('openrouter/chat_completion_anthropic_cache_write.json').toString('utf8'));
  return { status: 200, headers: JSON_TYPE, body: Buffer.from(JSON.stringify({ ...body, model })) };
};

/** `n` random CJK characters (3 UTF-8 bytes each, no run to compress): the widest text a bound lets through. */
function cjk(n: number): string {
  const random = randomBytes(2 * n);
  let text = '';
  for (let i = 0; i < n; i++) text += String.fromCharCode(0x4e00 + (random.readUInt16BE(2 * i) % 0x5000));
  return text;
}

/** A form for /v1/audio/transcriptions. */
function transcriptionForm(model: string): { body: Buffer; type: string } {
  const boundary = 'tollgate-edge-bounds';
  const body = Buffer.concat([
    Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="model"\r\n\r\n${model}\r\n`),
    Buffer.from(
      `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="a.mp3"\r\nContent-Type: audio/mpeg\r\n\r\nID3fake\r\n--${boundary}--\r\n`,
    ),
  ]);
  return { body, type: `multipart/form-data; boundary=${boundary}` };
}

describe('reliability: bounds at the edge', function () {
  this.timeout(60_000);
  const upstream = new FaultyUpstream();
  let gw: TestGateway;
  before(async () => {
    await upstream.start();
    gw = await startGateway(upstream.url);
  });
  after(async () => {
    await gw?.stop();
    await upstream.stop();
  });
  beforeEach(() => upstream.reset());

  it('a model name over 256 characters: 400 invalid_model, nothing forwarded, and the name neither logged nor stored', async () => {
    const model = `gpt-4o-${randomBytes(1050).toString('base64')}`.slice(0, 1400);
    const json = await call(gw, '/v1/chat/completions', { body: chatBody({ model }) });
    expectGatewayError(json, 400, 'invalid_model');
    expect(json.json.error.param).to.equal('model');
    const form = transcriptionForm(model);
    const multipart = await call(gw, '/v1/audio/transcriptions', {
      body: form.body,
      headers: { ...jsonHeaders(gw), 'content-type': form.type },
    });
    expectGatewayError(multipart, 400, 'invalid_model');
    for (const res of [json, multipart]) expect(res.text).to.not.include(model.slice(7, 47));
    expect(upstream.received).to.have.length(0);

    // One record each, as for every request that reached an endpoint, without the name.
    const ids = [json, multipart].map((r) => r.headers['x-gateway-request-id'] as string);
    const records = await recordsFor(gw, ids);
    for (const id of ids)
      expect(records.get(id)).to.include({ model: null, served_model: null, status: 400, error_code: 'invalid_model' });
    expect(gw.logs.filter((l) => l.includes(model.slice(7, 47)))).to.deep.equal([]);
  });

  it('a model name of exactly 256 characters is forwarded and stored as sent', async () => {
    const model = `gpt-4o-${'m'.repeat(249)}`;
    expect(model).to.have.length(256);
    const res = await call(gw, '/v1/chat/completions', { body: chatBody({ model }) });
    expect(res.status, res.text.slice(0, 200)).to.equal(200);
    expect(JSON.parse(upstream.last().body.toString('utf8')).model).to.equal(model);
    const record = (await recordsFor(gw, [res.headers['x-gateway-request-id'] as string])).values().next().value;
    expect(record.model).to.equal(model);
  });

  it('no client value is echoed whole in an error message', async () => {
    const long = (c: string) => c.repeat(5000);
    const cases: {
      what: string;
      path: string;
      headers?: Record<string, string>;
      body?: string;
      code: string;
      value: string;
    }[] = [
      {
        what: 'X-Gateway-Provider',
        path: '/v1/chat/completions',
        headers: { 'x-gateway-provider': long('p') },
        code: 'provider_unknown',
        value: long('p'),
      },
      {
        what: 'a model no provider serves',
        path: '/v1/chat/completions',
        body: chatBody({ model: `unknown-${'u'.repeat(248)}` }),
        code: 'provider_not_determined',
        value: 'u'.repeat(248),
      },
      {
        what: "a model not of the endpoint's provider",
        path: '/v1/messages',
        body: chatBody({ model: `gpt-${'g'.repeat(252)}` }),
        code: 'model_provider_mismatch',
        value: 'g'.repeat(252),
      },
      {
        what: 'a tag key too long',
        path: '/v1/chat/completions',
        headers: { [`x-gateway-metadata-${'k'.repeat(3000)}`]: 'v' },
        code: 'invalid_metadata',
        value: 'k'.repeat(3000),
      },
      {
        what: 'a tag key given twice',
        path: '/v1/chat/completions',
        headers: { 'x-gateway-metadata': `{"${'t'.repeat(3000)}": "a", "${'T'.repeat(3000)}": "b"}` },
        code: 'invalid_metadata',
        value: 't'.repeat(3000),
      },
    ];
    for (const c of cases) {
      const res = await call(gw, c.path, { body: c.body ?? chatBody(), headers: { ...jsonHeaders(gw), ...c.headers } });
      expectGatewayError(res, 400, c.code);
      expect(res.json.error.message.length, c.what).to.be.at.most(400);
      expect(res.json.error.message, c.what).to.not.include(c.value.slice(0, 120));
    }
    // The admin API too: an unknown workspace named in a key request.
    const res = await request(`${gw.adminUrl}/api/keys`, {
      method: 'POST',
      headers: { authorization: `Bearer ${TEST_ADMIN_TOKEN}`, 'content-type': 'application/json' },
      body: JSON.stringify({ workspace: long('w') }),
    });
    const body = (await res.body.json()) as { error: { code: string; message: string } };
    expect([res.statusCode, body.error.code]).to.deep.equal([400, 'invalid_body']);
    expect(body.error.message.length).to.be.at.most(400);
    expect(body.error.message).to.not.include('w'.repeat(120));
  });

  it('a served model over 256 characters from the provider is stored cut to 256, ending with the marker', async () => {
    upstream.respondWith((req) =>
      req.mount === 'openrouter' ? openrouterAnswer(`anthropic/${'s'.repeat(5000)}`) : undefined,
    );
    const res = await call(gw, '/v1/chat/completions', {
      body: chatBody({ model: 'anthropic/claude-sonnet-4.6' }),
      headers: jsonHeaders(gw, { 'x-gateway-provider': 'openrouter' }),
    });
    expect(res.status, res.text.slice(0, 200)).to.equal(200);
    expect(res.json.model).to.have.length(5010); // the client gets the provider's answer unchanged
    const record = (await recordsFor(gw, [res.headers['x-gateway-request-id'] as string])).values().next().value;
    expect(record.served_model).to.have.length(256);
    expect(record.served_model).to.equal(`anthropic/${'s'.repeat(256 - 10 - 12)}…[truncated]`);
  });

  it('leaked no planted secret', async () => {
    await expectNoSecrets(gw);
  });

  describe('PostgreSQL: a request at every default bound is stored, not quarantined', () => {
    const pgUpstream = new FaultyUpstream();
    let pgw: TestGateway | undefined;
    let url: string;
    const schema = `tg_bounds_${process.pid}_${Date.now().toString(36)}`;
    before(async function () {
      url = await requirePostgres(this, 'edge bounds on PostgreSQL');
      await pgUpstream.start();
      pgw = await startGateway(pgUpstream.url, `storage: { url: "${url}", schema: ${schema} }\n`);
    });
    after(async () => {
      await pgw?.stop();
      await pgUpstream.stop();
      if (!url) return;
      const c = new Client({ connectionString: url });
      await c.connect();
      await c.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
      await c.end();
    });

    it('model and served model of 256 random CJK characters, a 64-character tag key and a 256-character CJK value', async () => {
      // Each CJK character is 3 bytes in UTF-8: the widest text the bounds let through (2 UTF-16 units make 4 bytes).
      const model = cjk(256);
      const served = cjk(256);
      const tagKey = `k${randomBytes(40).toString('hex')}`.slice(0, 64);
      const tagValue = cjk(256);
      pgUpstream.respondWith((req) => (req.mount === 'openrouter' ? openrouterAnswer(served) : undefined));
      // Header values travel as bytes: the tag's UTF-8 bytes, one latin1 character each (the attribution plugin decodes them).
      const res = await call(pgw!, '/v1/chat/completions', {
        body: chatBody({ model }),
        headers: jsonHeaders(pgw!, {
          'x-gateway-provider': 'openrouter',
          [`x-gateway-metadata-${tagKey}`]: Buffer.from(tagValue, 'utf8').toString('latin1'),
        }),
      });
      expect(res.status, res.text.slice(0, 300)).to.equal(200);
      const record = (await recordsFor(pgw!, [res.headers['x-gateway-request-id'] as string], 10_000))
        .values()
        .next().value;
      expect(record.model).to.equal(model);
      expect(record.served_model).to.equal(served);
      expect(record.tags).to.deep.equal({ [tagKey]: tagValue });
      const info = await admin(pgw!, '/api/info');
      expect(info.json.quarantined_records).to.equal(0);
      const bytes = Buffer.byteLength(model) + Buffer.byteLength(served) + tagKey.length + Buffer.byteLength(tagValue);
      console.log(
        `      stored on PostgreSQL: ${bytes} bytes of model, served model and tag in the tag rollup's key (B-tree limit 2,704 bytes per entry)`,
      );
      recordFigures('edge-bounds', 'postgres-key', { key_text_bytes: bytes, stored: true });
    });
  });
});
