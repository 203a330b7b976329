/**
 * The big-store generator for PostgreSQL: records made by the server (INSERT ... SELECT FROM generate_series, one
 * statement per day) from the mix's slot tables (bench/scale/mix.ts, loaded as temporary tables), so that nothing
 * crosses the wire per record; tag sets created once for every combination the mix can draw (the unused ones
 * removed at the end); then each day's rollups derived from its records (bench/scale/rollups-sql.ts).
 */
import { Client } from 'pg';
import { RECORD_COLUMNS } from '../../storage/codec';
import { openStore } from '../../storage';
import { monthStart, partitionName } from '../../storage/postgres-partitions';
import { COMBOS, COMBO_SLOT, COMBO_SLOTS, CUSTOMERS, CUSTOMER_NAMES, CUSTOMER_SLOT, CUSTOMER_SLOTS } from './mix';
import { FAILURE_SHARE, STAGING_SHARE, dayCounts } from './mix';
import { deriveRollupsSql } from './rollups-sql';
import { LOADED_TABLES, dropPostgresIndexes } from './bulk-indexes';
import { byMonth } from './mix';

export interface GenerateOptions {
  records: number;
  /** Days before `end` the records cover. */
  days: number;
  /** Epoch ms, a UTC day start: the records end before it. */
  end: number;
  seed?: number;
  /** Called after each day with the number of records written so far. */
  progress?: (written: number) => void;
}

const COST_SQL = `CASE WHEN z.failed THEN 0 WHEN z.in_rate > 0 THEN (z.input_all - z.cache_read) * z.in_rate
  + z.output * z.out_rate + z.cache_read * (z.in_rate / 10) END`;

/** Each column of usage_records as the generator computes it from the row `z` (see RECORDS_FROM). */
const COLUMN_SQL: Record<(typeof RECORD_COLUMNS)[number] | 'tag_set_id', string> = {
  id: `'scale-' || lpad(z.g::text, 10, '0')`,
  ts: 'z.ts',
  workspace_id: `'default'`,
  key_id: 'z.key_id',
  provider: 'z.provider',
  model: 'z.model',
  served_model: 'z.model',
  endpoint: 'z.endpoint',
  status: 'z.status',
  streamed: `z.u_stream < 0.04 AND z.endpoint <> 'messages'`,
  input_tokens: 'z.input_all - z.cache_read',
  output_tokens: 'z.output',
  cache_read_tokens: 'z.cache_read',
  cache_write_tokens: '0',
  cache_write_1h_tokens: '0',
  reasoning_tokens: 'z.reasoning',
  citation_tokens: '0',
  search_queries: '0',
  search_context_size: 'NULL',
  cost_pico: COST_SQL,
  provenance: `CASE WHEN z.failed THEN 'failed' WHEN z.in_rate > 0 THEN 'measured' ELSE 'unpriced' END`,
  price_version: `CASE WHEN NOT z.failed AND z.in_rate > 0 THEN 'scale' END`,
  latency_ms: '200 + floor(z.u_lat * 8000)::int',
  ttfb_ms: '100 + floor(z.u_ttfb * 800)::int',
  tags: 'z.tags',
  error_code: 'NULL',
  usage_source: `CASE WHEN z.failed THEN 'none' ELSE 'provider' END`,
  provider_cost_pico: 'NULL',
  cost_disagrees: 'NULL',
  tool_calls: 'NULL',
  price_id: `CASE WHEN NOT z.failed AND z.in_rate > 0 THEN z.provider || '/' || z.model END`,
  service_tier: 'NULL',
  input_audio_tokens: 'NULL',
  output_audio_tokens: 'NULL',
  generation_id: 'NULL',
  // The provider's time: the latency less an overhead of 1 to 12 ms (bench/scale/record.ts draws the same).
  upstream_ms: '200 + floor(z.u_lat * 8000)::int - (1 + (100 + floor(z.u_ttfb * 800)::int) % 12)',
  // No negotiated discount in the mix: the list cost is the cost (bench/scale/record.ts the same).
  list_cost_pico: COST_SQL,
  tag_set_id: 'z.set_id',
};
/** Token columns a failed request leaves empty. */
const TOKEN_COLUMNS = new Set<string>(
  RECORD_COLUMNS.filter((c) => (c.endsWith('_tokens') || c === 'search_queries') && COLUMN_SQL[c] !== 'NULL'),
);

const logUniform = (u: string, lo: string, hi: string) =>
  `round(exp(ln(${lo}) + ${u} * (ln(${hi}) - ln(${lo}))))::bigint`;

/** $1 first sequence number, $2 count, $3 the day's start. Subqueries with random() are evaluated once per row. */
const RECORDS_FROM = `FROM (
  SELECT y.*, CASE WHEN y.u_cache_on < 0.6 THEN least(y.input_all - 1, round(y.input_all * y.cache * y.u_cache * 2)::bigint)
    ELSE 0 END AS cache_read,
    CASE WHEN y.reasoning_model THEN round(y.output * (0.3 + 0.5 * y.u_reason))::bigint ELSE 0 END AS reasoning,
    y.status <> 200 AS failed
  FROM (
    SELECT x.*, c.key_id, c.provider, c.model, c.endpoint, c.cache, c.in_rate, c.out_rate,
      c.reasoning AS reasoning_model, s.set_id, s.tags,
      ${logUniform('x.u_in', 'c.in_lo', 'c.in_hi')} AS input_all, ${logUniform('x.u_out', 'c.out_lo', 'c.out_hi')} AS output
    FROM (
      SELECT g, $3::bigint + floor((g - $1 + random()) * 86400000 / $2)::bigint AS ts,
        floor(random() * ${COMBO_SLOTS})::int AS cslot, floor(random() * ${CUSTOMER_SLOTS})::int AS uslot,
        (random() < ${STAGING_SHARE})::int AS staging,
        CASE WHEN random() < ${FAILURE_SHARE} THEN CASE WHEN random() < 0.7 THEN 429 ELSE 500 END ELSE 200 END AS status,
        random() AS u_in, random() AS u_cache_on, random() AS u_cache, random() AS u_out, random() AS u_reason,
        random() AS u_stream, random() AS u_lat, random() AS u_ttfb
      FROM generate_series($1::bigint, $1::bigint + $2 - 1) g
    ) x
    JOIN scale_combo_slots cs ON cs.slot = x.cslot
    JOIN scale_combos c ON c.idx = cs.combo
    JOIN scale_customer_slots us ON us.slot = x.uslot
    JOIN scale_sets s ON s.key = (c.tag_combo * ${CUSTOMERS} + us.customer) * 2 + x.staging
  ) y
) z`;

const columnSql = (c: keyof typeof COLUMN_SQL) =>
  TOKEN_COLUMNS.has(c) ? `CASE WHEN z.failed THEN NULL ELSE ${COLUMN_SQL[c]} END` : COLUMN_SQL[c];
const INSERT_DAY = `INSERT INTO usage_records (${Object.keys(COLUMN_SQL).join(', ')})
SELECT ${(Object.keys(COLUMN_SQL) as (keyof typeof COLUMN_SQL)[]).map(columnSql).join(',\n  ')}
${RECORDS_FROM}`;

/** Distinct (agent, feature, team) of the combinations: with a customer and env they make a tag set. */
function tagCombos(): { tagCombo: number[]; rows: string[] } {
  const index = new Map<string, number>();
  const tagCombo = COMBOS.map((c) => {
    const k = JSON.stringify([c.agent, c.feature, c.team]);
    if (!index.has(k)) index.set(k, index.size);
    return index.get(k)!;
  });
  return { tagCombo, rows: [...index.keys()] };
}

const lit = (s: string) => `'${s.replace(/'/g, "''")}'`;
const values = (rows: (string | number | boolean)[][]) =>
  rows.map((r) => `(${r.map((v) => (typeof v === 'string' ? lit(v) : String(v))).join(', ')})`).join(',\n');

/** The mix as temporary tables, and every tag set it can draw (created in tag_sets and tag_set_members). */
async function loadMix(c: Client): Promise<void> {
  const { tagCombo, rows } = tagCombos();
  await c.query(
    `CREATE TEMPORARY TABLE scale_combos AS SELECT * FROM (VALUES ${values(
      COMBOS.map((m, i) => [
        i,
        m.keyId,
        m.provider,
        m.model,
        m.endpoint,
        m.inLo,
        m.inHi,
        m.outLo,
        m.outHi,
        m.cache,
        m.inRate,
        m.outRate,
        m.reasoning,
        tagCombo[i],
      ]),
    )}) AS t (idx, key_id, provider, model, endpoint, in_lo, in_hi, out_lo, out_hi, cache, in_rate, out_rate, reasoning, tag_combo)`,
  );
  await c.query(`CREATE TEMPORARY TABLE scale_combo_slots (slot int PRIMARY KEY, combo int)`);
  await c.query(`INSERT INTO scale_combo_slots SELECT i - 1, s FROM unnest($1::int[]) WITH ORDINALITY AS u (s, i)`, [
    COMBO_SLOT,
  ]);
  await c.query(`CREATE TEMPORARY TABLE scale_customer_slots (slot int PRIMARY KEY, customer int)`);
  await c.query(`INSERT INTO scale_customer_slots SELECT i - 1, s FROM unnest($1::int[]) WITH ORDINALITY AS u (s, i)`, [
    CUSTOMER_SLOT,
  ]);
  // Every (agent, feature, team) x customer x env: its tags, its key in scale_sets, its canonical text (tagSetKey's).
  await c.query(
    `CREATE TEMPORARY TABLE scale_set_tags AS
     SELECT (t.i * ${CUSTOMERS} + cu.i) * 2 + e.staging AS key,
       jsonb_build_object('agent', t.a ->> 0, 'feature', t.a ->> 1, 'customer_id', cu.name, 'team', t.a ->> 2)
         || CASE WHEN e.staging = 1 THEN '{"env":"staging"}'::jsonb ELSE '{}'::jsonb END AS tags
     FROM (SELECT i - 1 AS i, a::jsonb AS a FROM unnest($1::text[]) WITH ORDINALITY AS u (a, i)) t,
       (SELECT i - 1 AS i, name FROM unnest($2::text[]) WITH ORDINALITY AS u (name, i)) cu,
       (VALUES (0), (1)) AS e (staging)`,
    [rows, CUSTOMER_NAMES],
  );
  await c.query(`ALTER TABLE scale_set_tags ADD COLUMN canon text`);
  await c.query(`UPDATE scale_set_tags SET canon = (SELECT '[' || string_agg('[' || to_json(e.key)::text || ',' ||
    to_json(e.value)::text || ']', ',' ORDER BY e.key COLLATE "C") || ']' FROM jsonb_each_text(tags) e)`);
  await c.query(`WITH created AS (
      INSERT INTO tag_sets (canon, digest) SELECT canon, sha256(convert_to(canon, 'UTF8')) FROM scale_set_tags ORDER BY key
      ON CONFLICT (digest) DO NOTHING RETURNING id, canon)
    INSERT INTO tag_set_members (set_id, key, value)
    SELECT created.id, e ->> 0, e ->> 1 FROM created, jsonb_array_elements(created.canon::jsonb) AS e`);
  await c.query(`CREATE TEMPORARY TABLE scale_sets AS SELECT t.key, s.id AS set_id, t.tags
    FROM scale_set_tags t JOIN tag_sets s ON s.digest = sha256(convert_to(t.canon, 'UTF8'))`);
  await c.query('ALTER TABLE scale_sets ADD PRIMARY KEY (key)');
  await c.query('ANALYZE scale_combos; ANALYZE scale_combo_slots; ANALYZE scale_customer_slots; ANALYZE scale_sets');
}

/** A partition for every month of the range (a gateway running over the year would have made each in its turn). */
async function createMonths(c: Client, from: number, to: number): Promise<void> {
  for (let m = monthStart(from); m < to; m = monthStart(m, 1))
    await c.query(
      `CREATE TABLE IF NOT EXISTS ${partitionName(m)} PARTITION OF usage_records FOR VALUES FROM (${m}) TO (${monthStart(m, 1)})`,
    );
}

/** Fills the store at `url` (schema `schema`, created by its migrations) with o.records records. */
export async function generatePostgres(url: string, schema: string, o: GenerateOptions): Promise<void> {
  await (await openStore(url, { schema })).close();
  const c = new Client({ connectionString: url });
  await c.connect();
  try {
    await c.query(`SET search_path TO ${schema}; SET synchronous_commit = off`);
    await c.query(`SELECT setseed(${((o.seed ?? 40) % 1000) / 1000})`);
    const days = dayCounts(o.records, o.days, o.end);
    await createMonths(c, days[0].day, o.end);
    await loadMix(c);
    const rebuild = await dropPostgresIndexes(c, LOADED_TABLES);
    await c.query(`SET work_mem = '256MB'; SET maintenance_work_mem = '512MB'`);
    let g = 0;
    for (const month of byMonth(days)) {
      await c.query('BEGIN');
      for (const { day, count } of month.days) {
        if (count > 0) await c.query(INSERT_DAY, [g, count, day]);
        g += count;
        o.progress?.(g);
      }
      // The month's partition holds its records alone: each rollup reads it once, without an index.
      for (const sql of deriveRollupsSql(month.from, month.to)) await c.query(sql);
      await c.query('COMMIT');
    }
    for (const sql of rebuild) await c.query(sql);
    // The write path creates a set when a record first carries it: the sets no record drew go.
    const unused = `NOT EXISTS (SELECT 1 FROM usage_tag_set_daily d WHERE d.set_id = %)`;
    await c.query(`DELETE FROM tag_set_members m WHERE ${unused.replace('%', 'm.set_id')}`);
    await c.query(`DELETE FROM tag_sets s WHERE ${unused.replace('%', 's.id')}`);
    await c.query('ANALYZE');
  } finally {
    await c.end();
  }
}
