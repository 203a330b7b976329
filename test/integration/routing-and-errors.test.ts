import { expect } from 'chai';
import { request } from 'undici';
import { ANTHROPIC_KEY, OPENAI_KEY, startTestGateway, type TestGateway, useGateway } from '../helpers/gateway';
import { rawRequest } from '../helpers/raw-http';
import { TestUpstream } from '../helpers/upstream';

/** Raw HTTP against the gateway, as curl would send it. */
async function call(
  gw: TestGateway,
  path: string,
  init: { method?: string; headers?: Record<string, string>; body?: string | Buffer } = {},
) {
  const res = await request(gw.url + path, {
    method: (init.method ?? 'POST') as 'POST',
    headers: {
      'content-type': 'application/json',
      'x-gateway-key': gw.key,
      authorization: `Bearer ${OPENAI_KEY}`,
      ...init.headers,
    },
    body: init.body,
  });
  const text = await res.body.text();
  let json: any;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  return { status: res.statusCode, headers: res.headers, text, json };
}

const chat = (model: string, extra: object = {}) =>
  JSON.stringify({ model, messages: [{ role: 'user', content: 'hi' }], ...extra });

describe('provider detection, auth and gateway errors', () => {
  const upstream = new TestUpstream();
  let gw: TestGateway;

  useGateway(upstream, (g) => (gw = g));

  describe('detection table (spec, Provider detection)', () => {
    const rows: {
      name: string;
      path: string;
      body: string;
      headers?: Record<string, string>;
      mount: string;
      upstreamPath: string;
    }[] = [
      {
        name: 'gpt- prefix -> openai',
        path: '/v1/chat/completions',
        body: chat('gpt-4o-mini'),
        mount: 'openai',
        upstreamPath: '/openai/v1/chat/completions',
      },
      {
        name: 'o3 prefix -> openai',
        path: '/v1/chat/completions',
        body: chat('o3-mini'),
        mount: 'openai',
        upstreamPath: '/openai/v1/chat/completions',
      },
      {
        name: 'sonar prefix -> perplexity (root path)',
        path: '/v1/chat/completions',
        body: chat('sonar-pro'),
        mount: 'perplexity',
        upstreamPath: '/perplexity/chat/completions',
      },
      {
        name: 'YAML-declared provider by prefix',
        path: '/v1/chat/completions',
        body: chat('mistral-large-latest'),
        mount: 'mistral',
        upstreamPath: '/mistral/v1/chat/completions',
      },
      {
        name: 'text-embedding- -> openai',
        path: '/v1/embeddings',
        body: JSON.stringify({ model: 'text-embedding-3-small', input: 'x' }),
        mount: 'openai',
        upstreamPath: '/openai/v1/embeddings',
      },
      {
        name: 'header wins over the prefix',
        path: '/v1/chat/completions',
        body: chat('gpt-4o-mini'),
        headers: { 'x-gateway-provider': 'openrouter' },
        mount: 'openrouter',
        upstreamPath: '/openrouter/api/v1/chat/completions',
      },
      {
        name: 'aggregator via header, vendor/model id',
        path: '/v1/chat/completions',
        body: chat('anthropic/claude-sonnet-4.5'),
        headers: { 'x-gateway-provider': 'openrouter' },
        mount: 'openrouter',
        upstreamPath: '/openrouter/api/v1/chat/completions',
      },
      {
        name: 'header slug is case-insensitive',
        path: '/v1/chat/completions',
        body: chat('gpt-4o'),
        headers: { 'x-gateway-provider': 'OpenAI' },
        mount: 'openai',
        upstreamPath: '/openai/v1/chat/completions',
      },
      {
        name: '/v1/messages -> anthropic',
        path: '/v1/messages',
        body: JSON.stringify({ model: 'claude-haiku-4-5', max_tokens: 10, messages: [] }),
        headers: { 'x-api-key': ANTHROPIC_KEY },
        mount: 'anthropic',
        upstreamPath: '/anthropic/v1/messages',
      },
      {
        name: 'query string forwarded',
        path: '/v1/chat/completions?api-version=2024-10-01',
        body: chat('gpt-4o'),
        mount: 'openai',
        upstreamPath: '/openai/v1/chat/completions?api-version=2024-10-01',
      },
    ];
    for (const row of rows) {
      it(row.name, async () => {
        const res = await call(gw, row.path, { body: row.body, headers: row.headers });
        expect(res.status, res.text).to.equal(200);
        expect(upstream.last().mount).to.equal(row.mount);
        expect(upstream.last().url).to.equal(row.upstreamPath);
      });
    }

    const refusals: {
      name: string;
      path: string;
      body: string;
      headers?: Record<string, string>;
      status: number;
      code: string;
    }[] = [
      {
        name: 'unknown model prefix',
        path: '/v1/chat/completions',
        body: chat('llama-3-70b'),
        status: 400,
        code: 'provider_not_determined',
      },
      {
        name: 'unknown provider slug',
        path: '/v1/chat/completions',
        body: chat('gpt-4o'),
        headers: { 'x-gateway-provider': 'nope' },
        status: 400,
        code: 'provider_unknown',
      },
      {
        name: '/v1/messages with a non-claude model',
        path: '/v1/messages',
        body: JSON.stringify({ model: 'gpt-4o', max_tokens: 1, messages: [] }),
        headers: { 'x-api-key': ANTHROPIC_KEY },
        status: 400,
        code: 'model_provider_mismatch',
      },
      {
        name: 'provider without the endpoint',
        path: '/v1/embeddings',
        body: JSON.stringify({ model: 'claude-3', input: 'x' }),
        status: 400,
        code: 'endpoint_not_supported',
      },
      {
        name: 'no model field',
        path: '/v1/chat/completions',
        body: JSON.stringify({ messages: [] }),
        status: 400,
        code: 'model_missing',
      },
      {
        name: 'model not a string',
        path: '/v1/chat/completions',
        body: JSON.stringify({ model: 42 }),
        status: 400,
        code: 'invalid_body',
      },
      {
        name: 'malformed JSON',
        path: '/v1/chat/completions',
        body: '{"model": "gpt-4o", ',
        status: 400,
        code: 'invalid_json',
      },
      {
        name: 'JSON that is not an object',
        path: '/v1/chat/completions',
        body: '["gpt-4o"]',
        status: 400,
        code: 'invalid_body',
      },
      { name: 'empty body', path: '/v1/chat/completions', body: '', status: 400, code: 'invalid_json' },
      {
        name: 'missing provider key',
        path: '/v1/messages',
        body: JSON.stringify({ model: 'claude-haiku-4-5', max_tokens: 1, messages: [] }),
        headers: { authorization: '' },
        status: 401,
        code: 'provider_key_missing',
      },
    ];
    for (const row of refusals) {
      it(`refuses: ${row.name} (${row.status} ${row.code})`, async () => {
        const res = await call(gw, row.path, { body: row.body, headers: row.headers });
        expect(res.status, res.text).to.equal(row.status);
        expect(res.json.error.code).to.equal(row.code);
        expect(res.json.error.message).to.be.a('string').and.not.equal('');
        expect(res.json.error).to.have.all.keys('message', 'type', 'param', 'code');
        expect(res.headers['x-gateway-request-id']).to.match(/^[0-9a-f-]{36}$/);
        expect(upstream.received, 'a refused request reached the provider').to.have.length(0);
      });
    }
  });

  describe('authentication', () => {
    it('refuses a missing gateway key with 401 gateway_key_missing', async () => {
      const res = await call(gw, '/v1/chat/completions', { body: chat('gpt-4o'), headers: { 'x-gateway-key': '' } });
      expect(res.status).to.equal(401);
      expect(res.json.error.code).to.equal('gateway_key_missing');
      expect(upstream.received).to.have.length(0);
    });

    it('refuses a wrong gateway key with 401 gateway_key_invalid', async () => {
      const res = await call(gw, '/v1/chat/completions', {
        body: chat('gpt-4o'),
        headers: { 'x-gateway-key': `${gw.key}x` },
      });
      expect(res.status).to.equal(401);
      expect(res.json.error.code).to.equal('gateway_key_invalid');
      expect(res.json.error.type).to.equal('authentication_error');
    });

    it('checks the gateway key before reading the body or routing', async () => {
      const res = await call(gw, '/v1/chat/completions', { body: 'not json', headers: { 'x-gateway-key': 'wrong' } });
      expect(res.json.error.code).to.equal('gateway_key_invalid');
    });

    it('the catalog needs only the gateway key', async () => {
      const res = await call(gw, '/v1/models', { method: 'GET', headers: { authorization: '' } });
      expect(res.status).to.equal(200);
      const noKey = await call(gw, '/v1/models', { method: 'GET', headers: { 'x-gateway-key': '' } });
      expect(noKey.status).to.equal(401);
    });
  });

  describe('paths and methods', () => {
    for (const path of [
      '/v1/chat',
      '/v1/completions',
      '/v2/chat/completions',
      '/v1/chat/completions/',
      '/V1/CHAT/COMPLETIONS',
      '/v1/chat%2Fcompletions',
      '//v1/chat/completions',
      '/v1/../v1/chat/completions',
      '/admin',
      '/',
    ]) {
      it(`404 for ${path}, never proxied`, async () => {
        const body = chat('gpt-4o');
        const res = await rawRequest(
          gw.url,
          `POST ${path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nX-Gateway-Key: ${gw.key}\r\nAuthorization: Bearer ${OPENAI_KEY}`,
          body,
        );
        expect(res.status).to.equal(404);
        expect(JSON.parse(res.body).error.code).to.equal('route_not_found');
        expect(upstream.received).to.have.length(0);
      });
    }

    it('405 with Allow for a wrong method', async () => {
      const get = await call(gw, '/v1/chat/completions', { method: 'GET' });
      expect(get.status).to.equal(405);
      expect(get.json.error.code).to.equal('method_not_allowed');
      expect(get.headers.allow).to.equal('POST');
      const post = await call(gw, '/v1/models', { method: 'POST', body: '{}' });
      expect(post.status).to.equal(405);
      expect(post.headers.allow).to.equal('GET');
    });

    it('405 for HEAD, which is never proxied (not even on GET /v1/models)', async () => {
      for (const headers of [{}, { 'x-gateway-provider': 'openai' }] as Record<string, string>[]) {
        const head = await call(gw, '/v1/models', { method: 'HEAD', headers });
        expect(head.status).to.equal(405);
        expect(head.headers.allow).to.equal('GET');
      }
      expect(upstream.received).to.have.length(0);
    });
  });

  describe('upstream failures', () => {
    it('passes upstream errors through unchanged (status, headers, bytes)', async () => {
      const body = Buffer.from(
        '{"error":{"message":"Rate limit reached","type":"requests","param":null,"code":"rate_limit_exceeded"}}',
      );
      upstream.respondWith(() => ({
        status: 429,
        headers: { 'content-type': 'application/json', 'retry-after': '7', 'x-ratelimit-remaining-requests': '0' },
        body,
      }));
      const res = await call(gw, '/v1/chat/completions', { body: chat('gpt-4o') });
      expect(res.status).to.equal(429);
      expect(res.text).to.equal(body.toString());
      expect(res.headers['retry-after']).to.equal('7');
      expect(res.headers['x-ratelimit-remaining-requests']).to.equal('0');
    });

    it('502 upstream_unreachable when the provider refuses connections', async () => {
      const dead = new TestUpstream();
      const deadUrl = await dead.start();
      await dead.stop();
      const other = await startTestGateway(deadUrl);
      try {
        const res = await call(other, '/v1/chat/completions', { body: chat('gpt-4o') });
        expect(res.status).to.equal(502);
        expect(res.json.error.code).to.equal('upstream_unreachable');
      } finally {
        await other.stop();
      }
    });

    it('504 upstream_timeout when the provider sends no headers in time', async () => {
      const slow = await startTestGateway(upstream.url, 'upstream: { first_byte_ms: 300 }');
      try {
        upstream.respondWith(() => ({ headerDelayMs: 4000, body: Buffer.from('{}') }));
        const started = Date.now();
        const res = await call(slow, '/v1/chat/completions', { body: chat('gpt-4o') });
        expect(res.status).to.equal(504);
        expect(res.json.error.code).to.equal('upstream_timeout');
        expect(Date.now() - started).to.be.lessThan(2500); // undici checks time-outs on a coarse (up to 1 s) timer
      } finally {
        await slow.stop();
      }
    });

    it('a per-provider time-out overrides the global one', async () => {
      const own = await startTestGateway(
        upstream.url,
        'upstream: { first_byte_ms: 60000 }\nproviders: { anthropic: { timeouts: { first_byte_ms: 300 } } }',
      );
      try {
        upstream.respondWith(() => ({ headerDelayMs: 4000, body: Buffer.from('{}') }));
        const started = Date.now();
        const res = await call(own, '/v1/messages', {
          body: JSON.stringify({ model: 'claude-haiku-4-5', max_tokens: 1, messages: [] }),
          headers: { 'x-api-key': ANTHROPIC_KEY },
        });
        expect(res.status).to.equal(504);
        expect(res.json.error.code).to.equal('upstream_timeout');
        expect(Date.now() - started).to.be.lessThan(2500);
      } finally {
        await own.stop();
      }
    });

    it('413 body_too_large above the configured limit', async () => {
      const small = await startTestGateway(upstream.url, 'server: { host: 127.0.0.1, port: 0, body_limit: 1kb }');
      try {
        const res = await call(small, '/v1/chat/completions', { body: chat('gpt-4o', { pad: 'x'.repeat(2000) }) });
        expect(res.status).to.equal(413);
        expect(res.json.error.code).to.equal('body_too_large');
        const ok = await call(small, '/v1/chat/completions', { body: chat('gpt-4o') });
        expect(ok.status).to.equal(200);
      } finally {
        await small.stop();
      }
    });
  });
});
