/**
 * A migration that builds an index outside a transaction (migration 018, CREATE INDEX CONCURRENTLY) on real
 * PostgreSQL, while the table it indexes is being written: writes go on during the build, a second instance
 * starting meanwhile waits for it and applies nothing, and the index ends valid.
 */
import { expect } from 'chai';
import { Client } from 'pg';
import { openStore, type UsageStore } from '../../storage';
import { usageRecord } from '../helpers/records';
import { requirePostgres } from '../helpers/services';
import { waitFor } from '../helpers/wait';

const INDEX = 'usage_tag_set_daily_day';
const DAY = 86_400_000;

describe('a migration building an index concurrently on PostgreSQL', function () {
  this.timeout(60_000);
  const schema = `tollgate_migration_${process.pid}_${Date.now().toString(36)}`;
  let url: string;
  let sql: Client;
  const stores: UsageStore[] = [];

  before(async function () {
    url = await requirePostgres(this, 'concurrent migration');
    sql = new Client({ connectionString: url, options: `-c search_path=${schema}` });
    await sql.connect();
  });

  after(async () => {
    await Promise.all(stores.map((s) => s.close()));
    if (!sql) return;
    await sql.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
    await sql.end();
  });

  const open = async (migrate: boolean) => {
    const store = await openStore(url, { schema, migrate });
    stores.push(store);
    return store;
  };

  it('writes are not held while the index is built, and the index ends valid', async () => {
    const writer = await open(true);
    // The database as the build before migration 018 left it.
    await sql.query(`DROP INDEX ${INDEX}`);
    await sql.query('DELETE FROM schema_migrations WHERE version = 18');

    // A write transaction still open when the build starts (a batch being written): every index build waits for
    // it. A plain CREATE INDEX would queue for the table's SHARE lock behind it, and every later write behind that.
    const inFlight = new Client({ connectionString: url, options: `-c search_path=${schema}` });
    await inFlight.connect();
    await inFlight.query('BEGIN');
    await inFlight.query('LOCK TABLE usage_tag_set_daily IN ROW EXCLUSIVE MODE');

    let migrated = false;
    const migrating = (await open(false)).migrate().then((r) => ((migrated = true), r));
    try {
      await waitFor(
        async () =>
          (
            await sql.query(
              `SELECT 1 FROM pg_stat_activity WHERE query LIKE 'CREATE INDEX%${INDEX}%' AND wait_event_type = 'Lock'`,
            )
          ).rowCount === 1,
        10_000,
        'the index build waiting for the open write',
      );
      const second = (await open(false)).migrate();

      let written = 0;
      const records = Array.from({ length: 20 }, (_, i) =>
        usageRecord({ id: `during-build-${i}`, ts: 3 * DAY + i, tags: { agent: 'a', feature: `f${i % 3}` } }),
      );
      const writes = (async () => {
        for (const r of records) written += (await writer.insertBatch([r])).inserted;
      })();
      await waitFor(() => written === records.length, 10_000, 'every write during the build');
      await writes;
      expect(migrated, 'the build still waits for the open write').to.equal(false);

      await inFlight.query('COMMIT');
      expect((await migrating).applied).to.deep.equal([18]);
      expect((await second).applied).to.deep.equal([]);
    } finally {
      await inFlight.end();
    }

    const index = await sql.query<{ valid: boolean }>(
      `SELECT i.indisvalid AS valid FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
       JOIN pg_namespace n ON n.oid = c.relnamespace WHERE c.relname = $1 AND n.nspname = $2`,
      [INDEX, schema],
    );
    expect(index.rows).to.deep.equal([{ valid: true }]);
    const byFeature = await writer.queryUsage({ from: 3 * DAY, to: 4 * DAY, groupBy: ['agent', 'feature'] });
    expect(byFeature.map((g) => [g.group, g.requests])).to.deep.equal([
      [{ agent: 'a', feature: 'f0' }, 7],
      [{ agent: 'a', feature: 'f1' }, 7],
      [{ agent: 'a', feature: 'f2' }, 6],
    ]);
  });
});
