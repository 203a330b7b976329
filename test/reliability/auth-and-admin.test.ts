import crypto from 'node:crypto';
import { expect } from 'chai';
import { sleep } from '../helpers/wait';
import { Agent, request } from 'undici';
import { hashGatewayKey, KeyRing } from '../../services/keys/key-ring';
import { ADMIN_LOCKOUT_DEFAULTS } from '../../config/schema';
import { addressKey, FailedKeyTracker } from '../../plugin-kit/lockout';
import type { AuthPlugin } from '../../plugins/auth';
import { OPENAI_KEY, TEST_ADMIN_TOKEN, TEST_GATEWAY_KEY, type TestGateway } from '../helpers/gateway';
import { FaultyUpstream } from '../helpers/faulty-upstream';
import { recordFigures } from '../helpers/figures';
import {
  admin,
  call,
  chatBody,
  expectGatewayError,
  expectNoSecrets,
  jsonHeaders,
  rawExchange,
  startGateway,
  WRONG_GATEWAY_KEY,
} from '../helpers/reliability';

/** Counts timingSafeEqual calls and the lengths it compared (the function is looked up on the module at call time). */
function spyTimingSafeEqual(): { calls: [number, number][]; restore: () => void } {
  const original = crypto.timingSafeEqual;
  const calls: [number, number][] = [];
  crypto.timingSafeEqual = ((a: NodeJS.ArrayBufferView, b: NodeJS.ArrayBufferView) => {
    calls.push([a.byteLength, b.byteLength]);
    return original(a, b);
  }) as typeof crypto.timingSafeEqual;
  return { calls, restore: () => (crypto.timingSafeEqual = original) };
}

const authPlugin = (gw: TestGateway): AuthPlugin =>
  (gw.gateway.proxy as any).deps.pipeline.plugins.find((p: { name: string }) => p.name === 'auth');

describe('reliability: gateway key checks, lockout and the admin API', function () {
  this.timeout(30_000);

  describe('gateway key checks compare digests, never the key', () => {
    const ring = new KeyRing();
    const key = 'tg_ExampleKeyForTheConstantTimeTest_0123456789ab';
    ring.add(hashGatewayKey(key), { keyId: 'k1', workspace: { id: 'w', name: 'w' } });

    it('refuses near misses of every shape without throwing', () => {
      const misses = [
        '',
        'x',
        key.slice(0, -1),
        `${key}x`,
        key.toUpperCase(),
        `${key.slice(0, -1)}c`,
        ` ${key}`,
        `${key}\u0000`,
        'é'.repeat(5000),
        'x'.repeat(100_000),
        hashGatewayKey(key),
      ];
      for (const m of misses) expect(ring.verify(m), JSON.stringify(m.slice(0, 20))).to.equal(undefined);
      expect(ring.verify(key)?.keyId).to.equal('k1');
    });

    it('the final comparison is timingSafeEqual over two 32-byte SHA-256 digests, whatever the key length', () => {
      const spy = spyTimingSafeEqual();
      try {
        ring.verify(key);
        expect(spy.calls).to.deep.equal([[32, 32]]);
      } finally {
        spy.restore();
      }
    });

    it('the admin token is checked the same way: equal-length digests for any presented token', async () => {
      const upstream = new FaultyUpstream();
      await upstream.start();
      const gw = await startGateway(upstream.url);
      const spy = spyTimingSafeEqual();
      try {
        for (const token of ['', 'x', TEST_ADMIN_TOKEN.slice(0, -1), `${TEST_ADMIN_TOKEN}x`, 'y'.repeat(5000)]) {
          const res = await admin(gw, '/api/usage', token);
          expect(res.status, token.slice(0, 10)).to.equal(401);
        }
        expect(spy.calls.length).to.be.at.least(4); // the empty token is refused before any comparison
        for (const [a, b] of spy.calls) expect([a, b]).to.deep.equal([32, 32]);
      } finally {
        spy.restore();
        await gw.stop();
        await upstream.stop();
      }
    });
  });

  describe('repeated invalid keys from one address are blocked (bounded, in memory)', () => {
    it('tracker: blocks after max_failures distinct keys in the window, for block_ms, then starts afresh', () => {
      let now = 1_000_000;
      const t = new FailedKeyTracker({ maxFailures: 3, windowMs: 10_000, blockMs: 5000, maxAddresses: 10 }, () => now);
      expect(t.fail('a', 'k1')).to.equal(0);
      expect(t.fail('a', 'k2')).to.equal(0);
      // The same wrong key again and again (a typo, a revoked key, a new key polled until it is live) guesses nothing.
      for (let i = 0; i < 100; i++) expect(t.fail('a', 'k2')).to.equal(0);
      expect(t.blockedFor('a')).to.equal(0);
      expect(t.fail('a', 'k3')).to.equal(5000);
      expect(t.blockedFor('a')).to.equal(5000);
      expect(t.blockedFor('b')).to.equal(0);
      now += 4999;
      expect(t.blockedFor('a')).to.equal(1);
      now += 1;
      expect(t.blockedFor('a')).to.equal(0);
      // A window that passed forgets old failures.
      t.fail('c', 'k1');
      t.fail('c', 'k2');
      now += 10_000;
      expect(t.fail('c', 'k3')).to.equal(0);
    });

    it('tracker: never holds more than max_addresses; the least recently failing is forgotten first', () => {
      const t = new FailedKeyTracker({ maxFailures: 2, windowMs: 60_000, blockMs: 60_000, maxAddresses: 100 });
      t.fail('keep', 'k0');
      for (let i = 0; i < 10_000; i++) {
        t.fail(`10.0.${i >> 8}.${i & 255}`, `k${i}`);
        if (i % 50 === 0) t.fail('keep', `k${i}`); // keeps failing: stays tracked (and blocked)
      }
      expect(t.size).to.equal(100);
      expect(t.blockedFor('keep')).to.be.greaterThan(0);
    });

    it('addresses: IPv4-mapped IPv6 unwrapped, IPv6 tracked per /64', () => {
      expect(addressKey('::ffff:127.0.0.1')).to.equal('127.0.0.1');
      expect(addressKey('10.1.2.3')).to.equal('10.1.2.3');
      expect(addressKey('2001:db8:0:1::17')).to.equal(addressKey('2001:0db8:0000:0001:ffff:1:2:3'));
      expect(addressKey('2001:db8:0:1::17')).to.not.equal(addressKey('2001:db8:0:2::17'));
      expect(addressKey('::1')).to.equal('0:0:0:0::/64');
      expect(addressKey('fe80::1%eth0')).to.equal('fe80:0:0:0::/64');
      expect(addressKey(undefined)).to.equal('unknown');
    });

    describe('through the gateway', () => {
      const upstream = new FaultyUpstream();
      let gw: TestGateway;
      const BLOCK_MS = 1500;
      before(async () => {
        await upstream.start();
        gw = await startGateway(
          upstream.url,
          `
plugins:
  - use: auth
    options: { lockout: { max_failures: 5, window_ms: 60000, block_ms: ${BLOCK_MS} } }
  - use: header-strip
  - use: attribution
  - use: usage-recorder
    options: { flush_interval_ms: 20 }
`,
        );
      });
      after(async () => {
        await gw?.stop();
        await upstream.stop();
      });

      it('5 different invalid keys block the address for invalid keys only (429 auth_blocked, Retry-After); a valid key from it is always accepted', async () => {
        const wrong = (key: string) =>
          call(gw, '/v1/chat/completions', { body: chatBody(), headers: jsonHeaders(gw, { 'x-gateway-key': key }) });
        for (let i = 0; i < 3; i++) expectGatewayError(await wrong(''), 401, 'gateway_key_missing');
        for (let i = 0; i < 20; i++) expectGatewayError(await wrong(WRONG_GATEWAY_KEY), 401, 'gateway_key_invalid'); // one key, repeated: no block
        for (let i = 1; i < 5; i++)
          expectGatewayError(await wrong(`${WRONG_GATEWAY_KEY}-${i}`), 401, 'gateway_key_invalid');
        const blockedAt = Date.now();
        // The address is blocked: any invalid key, new or already tried, is refused with 429 and Retry-After ...
        for (const key of [`${WRONG_GATEWAY_KEY}-new`, WRONG_GATEWAY_KEY]) {
          const refused = await wrong(key);
          expectGatewayError(refused, 429, 'auth_blocked');
          expect(Number(refused.headers['retry-after'])).to.be.within(1, 2);
        }
        expect(upstream.received).to.have.length(0);
        // ... while a valid key from the same address (a colleague behind the same NAT) goes through, every time.
        for (let i = 0; i < 3; i++)
          expect((await call(gw, '/v1/chat/completions', { body: chatBody() })).status).to.equal(200);
        expect(upstream.received).to.have.length(3);

        // Another loopback address is not blocked at all: its invalid key is a plain 401.
        const body = chatBody();
        const head =
          `POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nX-Gateway-Key: ${WRONG_GATEWAY_KEY}-other\r\n` +
          `Authorization: Bearer ${OPENAI_KEY}\r\nContent-Length: ${body.length}\r\nConnection: close\r\n\r\n`;
        const other = await rawExchange(gw.url, Buffer.from(head + body), 3000, 0, '127.0.0.2');
        expect(other.responses[0]?.status).to.equal(401);
        await sleep(BLOCK_MS - (Date.now() - blockedAt) + 50);
        expectGatewayError(await wrong(`${WRONG_GATEWAY_KEY}-after`), 401, 'gateway_key_invalid');
        expect(gw.logs.some((l) => l.includes('client address blocked'))).to.equal(true);
      });
    });

    describe('behind a trusted reverse proxy (client_address_header)', () => {
      const upstream = new FaultyUpstream();
      let gw: TestGateway;
      before(async () => {
        await upstream.start();
        gw = await startGateway(
          upstream.url,
          `
plugins:
  - use: auth
    options: { lockout: { max_failures: 3, block_ms: 60000, max_addresses: 200, client_address_header: X-Forwarded-For } }
  - use: header-strip
  - use: attribution
  - use: usage-recorder
`,
        );
      });
      after(async () => {
        await gw?.stop();
        await upstream.stop();
      });

      it('tracks the address the proxy appended (last X-Forwarded-For entry), each separately', async () => {
        const as = (xff: string, key = gw.key) =>
          call(gw, '/v1/chat/completions', {
            body: chatBody(),
            headers: jsonHeaders(gw, { 'x-forwarded-for': xff, 'x-gateway-key': key }),
          });
        for (let i = 0; i < 3; i++)
          expect((await as(`1.1.1.${i}, 10.0.0.1`, `${WRONG_GATEWAY_KEY}-${i}`)).status).to.equal(401);
        expectGatewayError(await as('10.0.0.1', `${WRONG_GATEWAY_KEY}-3`), 429, 'auth_blocked');
        expect((await as('10.0.0.1')).status, 'a valid key from the blocked address').to.equal(200);
        expectGatewayError(await as('10.0.0.2', `${WRONG_GATEWAY_KEY}-3`), 401, 'gateway_key_invalid');
      });

      it('memory stays bounded under failures from 1,000 addresses', async () => {
        for (let i = 0; i < 1000; i += 50) {
          await Promise.all(
            Array.from({ length: 50 }, (_, j) =>
              call(gw, '/v1/chat/completions', {
                body: chatBody(),
                headers: jsonHeaders(gw, {
                  'x-forwarded-for': `172.16.${(i + j) >> 8}.${(i + j) & 255}`,
                  'x-gateway-key': WRONG_GATEWAY_KEY,
                }),
              }),
            ),
          );
        }
        recordFigures('auth-and-admin', 'lockout-memory', {
          failing_addresses: 1000,
          max_addresses: 200,
          tracked: authPlugin(gw).failures!.size,
        });
        expect(authPlugin(gw).failures!.size).to.equal(200);
      });

      it('leaked no planted secret (the wrong keys included)', async () => {
        await expectNoSecrets(gw);
      });
    });
  });

  describe('the admin API', () => {
    const upstream = new FaultyUpstream();
    let gw: TestGateway;
    before(async () => {
      await upstream.start();
      gw = await startGateway(upstream.url);
      await call(gw, '/v1/chat/completions', { body: chatBody() });
    });
    after(async () => {
      await gw?.stop();
      await upstream.stop();
    });

    const routes = [
      '/api/usage',
      '/api/requests',
      '/api/keys',
      '/api/budgets',
      '/api/dimensions',
      '/api/info',
      '/api/usage.csv',
      '/api/nope',
      '/api/../api/usage',
    ];

    it('refuses a missing, wrong or mangled admin token on every route (401, nothing of the data)', async () => {
      const wrong: Record<string, string>[] = [
        {},
        { authorization: 'Bearer nope' },
        { authorization: `Bearer ${TEST_ADMIN_TOKEN.toUpperCase()}` },
        { authorization: `Bearer ${TEST_ADMIN_TOKEN.slice(0, -1)}` },
        { authorization: `Basic ${Buffer.from(`admin:${TEST_ADMIN_TOKEN}`).toString('base64')}` },
        { authorization: TEST_ADMIN_TOKEN },
        { 'x-admin-token': `${TEST_ADMIN_TOKEN}x` },
        { 'x-gateway-key': TEST_GATEWAY_KEY },
        { authorization: `Bearer ${TEST_GATEWAY_KEY}` },
      ];
      for (const route of routes) {
        for (const headers of wrong) {
          const res = await request(`${gw.adminUrl}${route}`, { headers });
          const text = await res.body.text();
          expect(res.statusCode, `${route} ${JSON.stringify(headers)}`).to.equal(401);
          expect(text).to.not.include('gpt-4o-mini');
        }
        const inQuery = await request(
          `${gw.adminUrl}${route}?token=${TEST_ADMIN_TOKEN}&access_token=${TEST_ADMIN_TOKEN}`,
        );
        expect(inQuery.statusCode, `${route}: token in the query string`).to.equal(401);
        await inQuery.body.text();
      }
      for (const method of ['POST', 'DELETE'] as const) {
        const res = await request(`${gw.adminUrl}/api/keys${method === 'DELETE' ? '/test' : ''}`, {
          method,
          headers: { 'content-type': 'application/json' },
          body: '{"workspace":"default"}',
        });
        expect(res.statusCode, method).to.equal(401);
        await res.body.text();
      }
    });

    it('the dashboard page holds no data, and its static files cannot be used to read other files', async () => {
      // Under /assets/ only the dashboard's own files exist; any other path is the API's, which wants the token.
      const paths: [string, number][] = [
        ['/assets/../../../package.json', 404],
        ['/assets/..%2f..%2f..%2fpackage.json', 404],
        ['/assets/%2e%2e/%2e%2e/package.json', 404],
        ['/assets//etc/passwd', 404],
        ['/..%2fgateway.config.yaml', 401],
      ];
      for (const [path, status] of paths) {
        const res = await rawExchange(
          gw.adminUrl!,
          Buffer.from(`GET ${path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`),
        );
        const r = res.responses[0];
        expect(r, path).to.not.equal(undefined);
        expect(r.status, path).to.equal(status);
        expect(r.body.toString()).to.not.include('"devDependencies"');
        expect(r.body.toString()).to.not.include('root:');
      }
    });

    it('is not reachable through the proxy port, in any spelling', async () => {
      const port = new URL(gw.adminUrl!).port;
      const heads = [
        'GET /api/usage HTTP/1.1\r\nHost: x',
        'GET /api/requests HTTP/1.1\r\nHost: x',
        'GET / HTTP/1.1\r\nHost: x',
        'GET /assets/style.css HTTP/1.1\r\nHost: x',
        `GET http://127.0.0.1:${port}/api/usage HTTP/1.1\r\nHost: 127.0.0.1:${port}`,
        `GET /api/usage HTTP/1.1\r\nHost: 127.0.0.1:${port}`,
        'GET /v1/../api/usage HTTP/1.1\r\nHost: x',
        'GET /v1/models/../../api/usage HTTP/1.1\r\nHost: x',
      ];
      for (const head of heads) {
        const res = await rawExchange(
          gw.url,
          Buffer.from(
            `${head}\r\nAuthorization: Bearer ${TEST_ADMIN_TOKEN}\r\nX-Gateway-Key: ${gw.key}\r\nConnection: close\r\n\r\n`,
          ),
        );
        const r = res.responses[0];
        expect(r?.status, head).to.equal(404);
        expect(JSON.parse(r.body.toString()).error.code).to.equal('route_not_found');
      }
      expect(upstream.received.filter((r) => !r.url.endsWith('/chat/completions'))).to.deep.equal([]);
    });

    describe('wrong admin tokens from one address are blocked', () => {
      /** Admin calls from another loopback address (the gateway's own 127.0.0.1 stays usable for the other tests). */
      const from = (local: string) => new Agent({ localAddress: local });
      const adminAs = async (agent: Agent, base: string, token: string | undefined, path = '/api/usage') => {
        const res = await request(`${base}${path}`, {
          dispatcher: agent,
          headers: token === undefined ? {} : { authorization: `Bearer ${token}` },
        });
        const text = await res.body.text();
        return {
          status: res.statusCode,
          retryAfter: res.headers['retry-after'],
          text,
          json: text.startsWith('{') ? JSON.parse(text) : undefined,
        };
      };

      it(`${ADMIN_LOCKOUT_DEFAULTS.maxFailures} different wrong tokens block the address (429 auth_blocked, Retry-After), even for the right token; other addresses are not affected`, async () => {
        const attacker = from('127.0.0.3');
        try {
          const { maxFailures, blockMs } = ADMIN_LOCKOUT_DEFAULTS;
          // A missing token and one wrong token repeated (an old token in a dashboard tab) guess nothing: never blocked.
          for (let i = 0; i < 5; i++) expect((await adminAs(attacker, gw.adminUrl!, undefined)).status).to.equal(401);
          for (let i = 0; i < 3 * maxFailures; i++)
            expect((await adminAs(attacker, gw.adminUrl!, `${WRONG_GATEWAY_KEY}-admin-0`)).status).to.equal(401);
          for (let i = 1; i < maxFailures - 1; i++)
            expect(
              (await adminAs(attacker, gw.adminUrl!, `${WRONG_GATEWAY_KEY}-admin-${i}`)).status,
              `guess ${i + 1}`,
            ).to.equal(401);
          expect(
            (await adminAs(attacker, gw.adminUrl!, TEST_ADMIN_TOKEN)).status,
            'the right token before the block',
          ).to.equal(200);
          const last = await adminAs(attacker, gw.adminUrl!, `${WRONG_GATEWAY_KEY}-admin-last`);
          expect(last.status, `guess ${maxFailures}: ${last.text}`).to.equal(429);
          expect(last.json.error.code).to.equal('auth_blocked');
          expect(Number(last.retryAfter)).to.equal(blockMs / 1000);
          const right = await adminAs(attacker, gw.adminUrl!, TEST_ADMIN_TOKEN, '/api/keys');
          expect(right.status, 'the right token from a blocked address').to.equal(429);
          expect(right.json.error.code).to.equal('auth_blocked');
          expect(Number(right.retryAfter)).to.be.within(blockMs / 1000 - 5, blockMs / 1000);
          expect(right.text, 'nothing of the data').to.not.include('"data"');
          // Another address (and the page itself, which holds no data) still work.
          expect((await admin(gw, '/api/usage')).status, 'the right token from 127.0.0.1').to.equal(200);
          expect((await adminAs(attacker, gw.adminUrl!, undefined, '/')).status, 'the dashboard page').to.equal(200);
          expect(
            gw.logs.filter((l) => l.includes('wrong admin tokens')).length,
            'one warning when the block starts',
          ).to.equal(1);
        } finally {
          await attacker.close();
        }
      });

      it('the block ends after block_ms, and the address starts afresh (admin.lockout from YAML: 3 failures, 700 ms)', async () => {
        const short = await startGateway(upstream.url, 'admin: { lockout: { max_failures: 3, block_ms: 700 } }');
        const base = short.adminUrl!;
        const attacker = from('127.0.0.4');
        try {
          expect((await adminAs(attacker, base, 'guess-1')).status).to.equal(401);
          expect((await adminAs(attacker, base, 'guess-2')).status).to.equal(401);
          const blocked = await adminAs(attacker, base, 'guess-3');
          expect(blocked.status).to.equal(429);
          expect(blocked.retryAfter).to.equal('1');
          const blockedAt = Date.now();
          expect((await adminAs(attacker, base, TEST_ADMIN_TOKEN)).status).to.equal(429);
          await sleep(700 - (Date.now() - blockedAt) + 50);
          expect((await adminAs(attacker, base, TEST_ADMIN_TOKEN)).status, 'after the block').to.equal(200);
          // Afresh: two new wrong tokens do not block again.
          expect((await adminAs(attacker, base, 'guess-4')).status).to.equal(401);
          expect((await adminAs(attacker, base, 'guess-5')).status).to.equal(401);
          expect((await adminAs(attacker, base, TEST_ADMIN_TOKEN)).status).to.equal(200);
        } finally {
          await attacker.close();
          await short.stop();
        }
      });

      it('admin.lockout.enabled: false turns the block off', async () => {
        const open = await startGateway(upstream.url, 'admin: { lockout: { enabled: false } }');
        const attacker = from('127.0.0.5');
        try {
          for (let i = 0; i < ADMIN_LOCKOUT_DEFAULTS.maxFailures + 2; i++)
            expect((await adminAs(attacker, open.adminUrl!, `guess-${i}`)).status).to.equal(401);
          expect((await adminAs(attacker, open.adminUrl!, TEST_ADMIN_TOKEN)).status).to.equal(200);
        } finally {
          await attacker.close();
          await open.stop();
        }
      });
    });

    it('leaked no planted secret in its answers', async () => {
      await admin(gw, '/api/requests');
      await admin(gw, '/api/keys');
      await admin(gw, '/api/info');
      await admin(gw, '/api/usage.csv');
      await expectNoSecrets(gw);
    });
  });
});
