/**
 * A mocha spec file for missing-services.test.ts, run there in a child process with a chosen environment (CI,
 * DATABASE_URL, REDIS_URL, PATH): one suite per service of helpers/services.ts, each with one test that passes
 * when it runs. Not named *.test.ts, so that the main run does not pick it up.
 */
import { requirePostgres, requireRedis, requireRedisServer } from './services';

describe('probe PostgreSQL suite', () => {
  before(async function () {
    await requirePostgres(this, 'probe PostgreSQL suite');
  });
  it('runs', () => undefined);
});

describe('probe Redis suite', () => {
  before(async function () {
    await requireRedis(this, 'probe Redis suite');
  });
  it('runs', () => undefined);
});

describe('probe redis-server suite', () => {
  before(function () {
    requireRedisServer(this, 'probe redis-server suite');
  });
  it('runs', () => undefined);
});
