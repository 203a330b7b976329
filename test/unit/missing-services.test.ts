import { execFile } from 'node:child_process';
import { resolve } from 'node:path';
import { promisify } from 'node:util';
import { expect } from 'chai';
import { PROJECT_ROOT } from '../helpers/fixtures';
import { freePort } from '../helpers/redis-server';

const run = promisify(execFile);

/**
 * helpers/services.ts when PostgreSQL, Redis or the redis-server binary is missing: a child mocha runs a probe
 * suite per service (helpers/services-probe-suite.ts) with PATH pointing nowhere (no redis-server) and the URLs
 * unset or naming ports nothing listens on. In CI every missing service fails its suite, loudly; elsewhere a missing
 * one is skipped with a loud SKIPPED line; a URL that does not answer fails everywhere.
 */
describe('missing services: never a silent skip, and never a skip in CI', function () {
  this.timeout(30_000);
  const mocha = resolve(PROJECT_ROOT, 'node_modules/mocha/bin/mocha.js');
  const suite = resolve(PROJECT_ROOT, 'dist/test/helpers/services-probe-suite.js');
  const attempt = (env: NodeJS.ProcessEnv) =>
    run(process.execPath, [mocha, '--no-config', '--exit', '--reporter', 'spec', suite], {
      env: { PATH: '/nonexistent-bin', ...env },
      encoding: 'utf8',
    }).then(
      (r) => ({ code: 0, out: r.stdout }),
      (e) => ({ code: e.code as number, out: String(e.stdout) }),
    );
  /** A FAILED or SKIPPED line between two bars of "!". */
  const loud = (kind: string, suiteName: string, reason: string) =>
    new RegExp(`^!{20,}\\n${kind}: ${suiteName}: ${reason}`, 'm');

  it('CI=true without DATABASE_URL, REDIS_URL or redis-server: all three suites fail, each with a FAILED line', async () => {
    const { code, out } = await attempt({ CI: 'true' });
    expect(code, out).to.equal(3); // mocha exits with the number of failures
    expect(out).to.match(loud('FAILED', 'probe PostgreSQL suite', 'DATABASE_URL is not set'));
    expect(out).to.match(loud('FAILED', 'probe Redis suite', 'REDIS_URL is not set'));
    expect(out).to.match(loud('FAILED', 'probe redis-server suite', 'no redis-server binary on PATH'));
    expect(out).to.include('Error: probe PostgreSQL suite cannot run in CI (CI=true): DATABASE_URL is not set');
    expect(out).to.include('Error: probe Redis suite cannot run in CI (CI=true): REDIS_URL is not set');
    expect(out).to.include(
      'Error: probe redis-server suite cannot run in CI (CI=true): no redis-server binary on PATH',
    );
    expect(out).to.match(/^\s+0 passing/m);
  });

  it('outside CI, the same: three loud SKIPPED lines, three pending tests, and the run passes', async () => {
    const { code, out } = await attempt({});
    expect(code, out).to.equal(0);
    expect(out).to.match(loud('SKIPPED', 'probe PostgreSQL suite', 'DATABASE_URL is not set'));
    expect(out).to.match(loud('SKIPPED', 'probe Redis suite', 'REDIS_URL is not set'));
    expect(out).to.match(loud('SKIPPED', 'probe redis-server suite', 'no redis-server binary on PATH'));
    expect(out).to.match(/^\s+3 pending/m);
    expect(out).to.not.include('FAILED');
  });

  for (const ci of [undefined, 'true']) {
    it(`${ci ? 'CI=true' : 'outside CI'}: DATABASE_URL and REDIS_URL naming ports nothing listens on fail, naming the server`, async () => {
      const [pgPort, redisPort] = [await freePort(), await freePort()];
      const env: NodeJS.ProcessEnv = {
        DATABASE_URL: `postgres://postgres:not-shown@127.0.0.1:${pgPort}/test`,
        REDIS_URL: `redis://127.0.0.1:${redisPort}`,
      };
      if (ci) env.CI = ci;
      const { code, out } = await attempt(env);
      // redis-server is still missing: a failure in CI, a skip elsewhere.
      expect(code, out).to.equal(ci ? 3 : 2);
      expect(out).to.match(
        loud(
          'FAILED',
          'probe PostgreSQL suite',
          `DATABASE_URL is set but PostgreSQL at 127\\.0\\.0\\.1:${pgPort} does not answer: connect ECONNREFUSED`,
        ),
      );
      expect(out).to.match(
        loud(
          'FAILED',
          'probe Redis suite',
          `REDIS_URL is set but Redis at 127\\.0\\.0\\.1:${redisPort} does not answer: connect ECONNREFUSED`,
        ),
      );
      expect(out, 'the password in the URL').to.not.include('not-shown');
    });
  }
});
