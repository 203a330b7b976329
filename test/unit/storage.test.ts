/** Pure parts of the storage layer: URL parsing, query planning, codecs, the record queue. */
import { MessageChannel, receiveMessageOnPort } from 'node:worker_threads';
import { expect } from 'chai';
import type { UsageRecord } from '../../records/usage-record';
import { COUNTERS, COUNTER_COLUMNS, contribution, isZero, addTotals, zeroTotals } from '../../storage/counters';
import { RECORD_COLUMNS, recordValues } from '../../storage/codec';
import { postgresDialect, sqliteDialect } from '../../storage/dialect';
import { parseStorageUrl } from '../../storage/open';
import { decodeCursor, encodeCursor } from '../../storage/query/list';
import { parseFilters, planUsageQuery } from '../../storage/query/plan';
import { packRecords, packedBuffers, unpackRecords, type PackedRecords } from '../../storage/packed-records';
import { RecordDeque } from '../../storage/record-deque';
import { recordFromJson, recordToJson } from '../../storage/record-json';
import { ROLLUP_DIM_COLUMNS, RollupAccumulator, floorHour, rollupDims } from '../../storage/rollup';
import { TagSetIds, tagSetKey, tagSetMembers } from '../../storage/tag-sets';
import { usageRecord } from '../helpers/records';

const H = 3_600_000;
const T0 = Date.UTC(2025, 0, 1);

function rec(over: Partial<UsageRecord> = {}): UsageRecord {
  return usageRecord({
    id: 'r1',
    ts: T0 + 90_000,
    workspaceId: 'w',
    model: 'gpt-4o',
    servedModel: 'gpt-4o',
    streamed: true,
    inputTokens: 10,
    outputTokens: 5,
    costPico: 12_345_678_901_234_567_890n,
    provenance: 'measured',
    priceVersion: 'v1',
    latencyMs: 12,
    tags: { agent: 'a', '12': '007' },
    usageSource: 'provider',
    providerCostPico: null,
    costDisagrees: null,
    toolCalls: null,
    priceId: 'openai/gpt-4o',
    serviceTier: null,
    inputAudioTokens: null,
    outputAudioTokens: null,
    generationId: null,
    upstreamMs: null,
    listCostPico: null,
    ...over,
  });
}

describe('storage (unit)', () => {
  it('parses storage URLs', () => {
    expect(parseStorageUrl('sqlite:./data/t.db')).to.deep.equal({ kind: 'sqlite', path: './data/t.db' });
    expect(parseStorageUrl('sqlite::memory:')).to.deep.equal({ kind: 'sqlite', path: ':memory:' });
    expect(parseStorageUrl('sqlite:///var/lib/t.db')).to.deep.equal({ kind: 'sqlite', path: '/var/lib/t.db' });
    expect(parseStorageUrl('/var/lib/t.db')).to.deep.equal({ kind: 'sqlite', path: '/var/lib/t.db' });
    expect(parseStorageUrl('postgresql://u@h/db').kind).to.equal('postgres');
    expect(parseStorageUrl('postgres://u@h/db').kind).to.equal('postgres');
    expect(() => parseStorageUrl('mysql://h/db')).to.throw(/unsupported/);
  });

  it('plans the query path from the tag keys involved', () => {
    const r = { from: T0, to: T0 + 24 * H };
    expect(planUsageQuery({ ...r, groupBy: ['model', 'status'], filters: { workspace: 'w' } }).path).to.equal('rollup');
    expect(
      planUsageQuery({ ...r, groupBy: ['agent', 'provider'], filters: { agent: 'x', key_id: 'k' } }).path,
    ).to.equal('tag-rollup');
    expect(planUsageQuery({ ...r, groupBy: ['feature'], filters: { customer_id: 'acme' } }).path).to.equal('tag-set');
    // Two tag keys with a built-in grouping or filter, or hourly buckets: no tag-set rollup answers.
    expect(planUsageQuery({ ...r, groupBy: ['feature', 'model'], filters: { customer_id: 'acme' } }).path).to.equal(
      'raw',
    );
    expect(
      planUsageQuery({ ...r, groupBy: ['feature'], filters: { customer_id: 'acme', status: '200' } }).path,
    ).to.equal('raw');
    expect(planUsageQuery({ ...r, groupBy: ['feature', 'agent'], interval: 'hour' }).path).to.equal('raw');
    expect(planUsageQuery({ ...r, groupBy: ['tag:provider'] }).groupBy[0]).to.deep.equal({
      kind: 'tag',
      name: 'tag:provider',
      key: 'provider',
    });
    expect(() => planUsageQuery({ ...r, groupBy: ['agent', 'tag:agent'] })).to.throw(/twice/);
    expect(() => parseFilters({ status: 'ok' })).to.throw(/status/);
    expect(parseFilters({ workspace: '(none)', agent: '(untagged)' })).to.deep.equal({
      builtins: [{ dim: { kind: 'builtin', name: 'workspace', column: 'workspace_id' }, value: null }],
      tags: [{ key: 'agent', value: '(untagged)' }],
    });
  });

  it('reads whole hours from rollups and ragged edges from raw records', () => {
    const p = planUsageQuery({ from: T0 + 10 * 60_000, to: T0 + 5 * H + 1, groupBy: [] });
    expect(p.segments).to.deep.equal([
      { from: T0 + 10 * 60_000, to: T0 + H, path: 'raw' },
      { from: T0 + H, to: T0 + 5 * H, path: 'rollup' },
      { from: T0 + 5 * H, to: T0 + 5 * H + 1, path: 'raw' },
    ]);
    expect(planUsageQuery({ from: T0 + 1, to: T0 + 2, groupBy: [] }).segments).to.deep.equal([
      { from: T0 + 1, to: T0 + 2, path: 'raw' },
    ]);
    expect(planUsageQuery({ from: T0, to: T0, groupBy: [] }).segments).to.deep.equal([]);
  });

  it('reads whole days of two or more tag keys from the tag-set rollup and the partial days raw', () => {
    const D = 24 * H;
    const p = planUsageQuery({
      from: T0 + 5 * H,
      to: T0 + 3 * D + 1,
      groupBy: ['feature'],
      filters: { agent: 'x' },
      interval: 'day',
    });
    expect(p.segments).to.deep.equal([
      { from: T0 + 5 * H, to: T0 + D, path: 'raw' },
      { from: T0 + D, to: T0 + 3 * D, path: 'tag-set' },
      { from: T0 + 3 * D, to: T0 + 3 * D + 1, path: 'raw' },
    ]);
    expect(planUsageQuery({ from: T0 + H, to: T0 + D + H, groupBy: ['feature', 'agent'] }).segments).to.deep.equal([
      { from: T0 + H, to: T0 + D + H, path: 'raw' },
    ]);
  });

  it('round-trips records through the spill JSON with exact bigint cost and string tag values', () => {
    const r = rec();
    expect(recordFromJson(recordToJson(r))).to.deep.equal(r);
    expect(recordFromJson(recordToJson(rec({ costPico: null })))).to.deep.equal(rec({ costPico: null }));
    expect(() => recordFromJson('{"id":"x"}')).to.throw();
    expect(() => recordFromJson('{"id":"x","ts":1,"costPico":1.5}')).to.throw();
    // The list cost as exactly: a line spilled by a build before migration 022 has none (stored as NULL).
    const listed = rec({ costPico: 9_500_000_000n, listCostPico: 2n ** 70n + 1n });
    expect(recordToJson(listed)).to.include('"listCostPico":"1180591620717411303425"');
    expect(recordFromJson(recordToJson(listed))).to.deep.equal(listed);
    const { listCostPico: _l, ...before022 } = rec();
    expect(recordFromJson(recordToJson(before022 as UsageRecord))).to.not.have.property('listCostPico');
    expect(() => recordFromJson('{"id":"x","ts":1,"costPico":"1","listCostPico":1.5}')).to.throw(/listCostPico/);
  });

  it('packs batches by column for the writer thread: what arrives through a real port unpacks to the same records', () => {
    // rec()'s default cost is beyond 64 bits (a batch with it is not packed, below).
    const r = (over: Partial<UsageRecord>): UsageRecord =>
      rec({ costPico: 1_234_567n, searchContextSize: null, ...over });
    const batch = [
      r({}),
      r({ id: 'r2', costPico: 0n, ttfbMs: 7, streamed: false, keyId: 'k1', tags: {} }),
      r({
        id: 'r3',
        costPico: null,
        provenance: 'unpriced',
        inputTokens: null,
        outputTokens: 0,
        errorCode: 'upstream_500',
        status: 500,
      }),
      r({
        id: 'r4',
        costPico: -(2n ** 63n),
        model: null,
        servedModel: null,
        endpoint: null,
        searchContextSize: 'high',
        searchQueries: 2,
      }),
      r({
        id: 'r5-ïd✓',
        costPico: 2n ** 63n - 1n,
        workspaceId: null,
        priceVersion: null,
        tags: { customer_id: 'ünïcode ✓', agent: '', 'a b': 'x"y' },
      }),
      r({
        id: 'r6',
        latencyMs: 1.5,
        ts: T0 - 1,
        cacheReadTokens: 3,
        cacheWriteTokens: 4,
        cacheWrite1hTokens: 5,
        reasoningTokens: 6,
        citationTokens: 7,
      }),
      r({
        id: 'r7',
        usageSource: 'tokenizer',
        providerCostPico: 5_000_000_000n,
        costDisagrees: false,
        toolCalls: { web_search: 2, file_search: 1 },
        priceId: null,
        serviceTier: 'flex',
        inputAudioTokens: 3,
        outputAudioTokens: 0,
        generationId: 'gen-1773011155-RKj29WPs25kxzvCwOntV',
        upstreamMs: 812,
        listCostPico: 6_578_947_368n,
      }),
      r({
        id: 'r8',
        usageSource: 'none',
        providerCostPico: 0n,
        costDisagrees: true,
        inputTokens: null,
        outputTokens: null,
      }),
    ];
    const { port1, port2 } = new MessageChannel();
    try {
      const packed = packRecords(batch);
      expect(packed, 'every record fits').to.not.equal(undefined);
      port1.postMessage(packed, packedBuffers(packed!));
      expect(packed!.numbers.byteLength, 'buffers are handed over, not copied').to.equal(0);
      const got = unpackRecords(receiveMessageOnPort(port2)!.message as PackedRecords);
      expect(got).to.deep.equal(batch);
      // Tag order is kept: the tags column stores the object as JSON text.
      expect(JSON.stringify(got[4].tags)).to.equal(JSON.stringify(batch[4].tags));
    } finally {
      port1.close();
    }
    // Consecutive records with the same tags share one frozen object (the store works out its texts once).
    const run = unpackRecords(
      packRecords([
        r({ id: 'a' }),
        r({ id: 'b' }),
        r({ id: 'c', tags: { agent: 'x' } }),
        r({ id: 'd', tags: { agent: 'x' } }),
      ])!,
    );
    expect(run[0].tags).to.equal(run[1].tags);
    expect(run[2].tags).to.equal(run[3].tags).and.to.not.equal(run[1].tags);
    expect(Object.isFrozen(run[0].tags) && Object.isFrozen(run[2].tags)).to.equal(true);
    expect(run.map((x) => x.tags)).to.deep.equal([rec().tags, rec().tags, { agent: 'x' }, { agent: 'x' }]);
    // A record spilled before migration 003 has no searchContextSize: stored as NULL either way.
    const old = r({});
    delete old.searchContextSize;
    expect(unpackRecords(packRecords([old])!)[0].searchContextSize).to.equal(null);
    // Nor, before migration 008, what the counts and the cost rest on.
    const older = r({});
    for (const f of ['usageSource', 'providerCostPico', 'costDisagrees', 'toolCalls', 'priceId'] as const)
      delete older[f];
    delete older.listCostPico;
    expect(unpackRecords(packRecords([older])!)[0]).to.include({
      listCostPico: null,
      usageSource: null,
      providerCostPico: null,
      costDisagrees: null,
      toolCalls: null,
      priceId: null,
    });
  });

  it('does not pack a batch with a value of an unexpected type: it travels as it is and the store judges it', () => {
    const odd: Partial<Record<keyof UsageRecord, unknown>>[] = [
      { costPico: 2n ** 63n },
      { costPico: rec().costPico },
      { costPico: -(2n ** 63n) - 1n },
      { costPico: 5 },
      { listCostPico: 2n ** 63n },
      { listCostPico: 5 },
      { inputTokens: Number.NaN },
      { inputTokens: '12' },
      { ts: null },
      { streamed: 1 },
      { provenance: null },
      { model: 42 },
      { tags: { agent: 7 } },
      { tags: JSON.parse('{"__proto__":"x"}') },
      { tags: null },
      { tags: ['a'] },
    ];
    const fine = rec({ costPico: 1n, searchContextSize: null });
    expect(packRecords([fine, fine])).to.not.equal(undefined);
    for (const over of odd)
      expect(
        packRecords([fine, { ...fine, ...over } as UsageRecord]),
        JSON.stringify(over, (_, v) => (typeof v === 'bigint' ? `${v}n` : v)),
      ).to.equal(undefined);
  });

  it('encodes opaque cursors and rejects forged ones', () => {
    expect(decodeCursor(encodeCursor({ ts: 5, id: 'a"b' }))).to.deep.equal({ ts: 5, id: 'a"b' });
    expect(() => decodeCursor('garbage')).to.throw(/cursor/);
  });

  it('recombines SQLite hi/lo money sums exactly; pg sums pass through', () => {
    const v = 2n ** 70n + 12345n;
    expect(sqliteDialect.readMoney({ c_hi: v >> 32n, c_lo: v & 0xffffffffn }, 'c')).to.equal(v);
    expect(postgresDialect.readMoney({ c: v.toString() }, 'c')).to.equal(v);
    expect(postgresDialect.sql('a = ? AND b = ?')).to.equal('a = $1 AND b = $2');
  });

  it('accumulates one rollup increment per row key, tags included', () => {
    const acc = new RollupAccumulator();
    acc.add(rec({ id: 'a' }), 1);
    acc.add(rec({ id: 'b', costPico: null, tags: { agent: 'a' } }), 2);
    acc.add(rec({ id: 'c', ts: T0 + 2 * H }), 1);
    const { base, tags, tagSetDaily } = acc.result();
    // One row per (tag set, day): a and c share set 1 and their day.
    expect(tagSetDaily.map((t) => t.slice(0, 3))).to.deep.equal([
      [1, T0, 2],
      [2, T0, 1],
    ]);
    expect(base).to.have.length(2);
    expect(base[0].slice(0, 9)).to.deep.equal([
      floorHour(T0 + 90_000),
      'w',
      'openai',
      'gpt-4o',
      'gpt-4o',
      'chat.completions',
      '',
      200,
      2,
    ]);
    expect(tags.map((t) => t.slice(0, 3))).to.deep.equal([
      ['12', '007', T0],
      ['12', '007', T0 + 2 * H],
      ['agent', 'a', T0],
      ['agent', 'a', T0 + 2 * H],
    ]);
    const t = contribution(rec());
    expect(isZero(addTotals(t, contribution(rec()), -1))).to.equal(true);
  });

  it('adds and subtracts every counter of COUNTERS (addTotals is written out field by field)', () => {
    const delta = zeroTotals();
    COUNTERS.forEach((c, i) => {
      if (c.money) (delta as unknown as Record<string, bigint>)[c.field] = 10n ** 20n + BigInt(i);
      else (delta as unknown as Record<string, number>)[c.field] = i + 1;
    });
    const sum = addTotals(addTotals(zeroTotals(), delta), delta);
    for (const c of COUNTERS) {
      const want = c.money
        ? 2n * (delta as unknown as Record<string, bigint>)[c.field]
        : 2 * (delta as unknown as Record<string, number>)[c.field];
      expect(sum[c.field], c.field).to.equal(want);
    }
    expect(Object.keys(sum).sort()).to.deep.equal(COUNTERS.map((c) => c.field).sort());
    addTotals(addTotals(sum, delta, -1), delta, -1);
    expect(isZero(sum)).to.equal(true);
  });

  it("reuses a tags object's texts only while it cannot change (frozen)", () => {
    const tags: Record<string, string> = { agent: 'a' };
    const r = rec({ tags });
    const tagsColumn = (x: UsageRecord) => recordValues(x)[RECORD_COLUMNS.indexOf('tags')];
    expect([tagSetKey(r), tagsColumn(r)]).to.deep.equal(['[["agent","a"]]', '{"agent":"a"}']);
    tags.agent = 'b';
    expect([tagSetKey(r), tagsColumn(r)]).to.deep.equal(['[["agent","b"]]', '{"agent":"b"}']);
    const frozen = rec({ tags: Object.freeze({ feature: 'f', agent: 'c' }) });
    for (let i = 0; i < 2; i++)
      expect([tagSetKey(frozen), tagsColumn(frozen)]).to.deep.equal([
        '[["agent","c"],["feature","f"]]',
        '{"feature":"f","agent":"c"}',
      ]);
    expect([tagSetKey(rec({ tags: Object.freeze({}) })), tagSetKey(r)]).to.deep.equal(['[]', '[["agent","b"]]']);
  });

  it('sums consecutive records into the right rollup rows when they differ in one dimension only', () => {
    const variants: Partial<UsageRecord>[] = [
      { model: 'gpt-4o-mini' },
      { ts: T0 + 2 * H },
      { status: 500 },
      { keyId: 'k' },
      { workspaceId: null },
      { provider: 'anthropic' },
      { servedModel: 'gpt-4o-2024-08-06' },
      { endpoint: 'embeddings' },
      { tags: { agent: 'b' } },
    ];
    // Each record differs from the one before it in one field; runs of equal records in between.
    const records = variants.flatMap((over, i) => [
      rec({ id: `b${i}` }),
      rec({ id: `b${i}'` }),
      rec({ id: `v${i}`, ...over }),
    ]);
    const setOf = (x: UsageRecord) => (x.tags.agent === 'b' ? 2 : 1);
    const acc = new RollupAccumulator();
    for (const x of records) acc.add(x, setOf(x));
    const { base, tagSetDaily } = acc.result();
    const requests = (row: (string | number | bigint)[], dims: number) =>
      row[dims + COUNTER_COLUMNS.indexOf('requests')];
    const want = new Map<string, number>();
    for (const x of records)
      want.set(JSON.stringify(rollupDims(x)), (want.get(JSON.stringify(rollupDims(x))) ?? 0) + 1);
    expect(
      new Map(
        base.map((row) => [
          JSON.stringify(row.slice(0, ROLLUP_DIM_COLUMNS.length)),
          requests(row, ROLLUP_DIM_COLUMNS.length),
        ]),
      ),
    ).to.deep.equal(want);
    expect(tagSetDaily.map((row) => [row[0], requests(row, 2)])).to.deep.equal([
      [1, records.length - 1],
      [2, 1],
    ]);
  });

  it('names a tag set by its sorted string tags, unambiguously', () => {
    expect(tagSetKey(rec({ tags: { feature: 'f', agent: 'a', n: 3 as unknown as string } }))).to.equal(
      '[["agent","a"],["feature","f"]]',
    );
    expect(tagSetKey(rec({ tags: {} }))).to.equal('[]');
    expect(tagSetKey(rec({ tags: { a: 'x","b":"y' } }))).to.not.equal(tagSetKey(rec({ tags: { a: 'x', b: 'y' } })));
    expect(tagSetMembers(tagSetKey(rec({ tags: { b: 'ü"\n', a: '1' } })))).to.deep.equal([
      ['a', '1'],
      ['b', 'ü"\n'],
    ]);
  });

  it('caches tag set ids in two bounded generations; clear() forgets them all', () => {
    const ids = new TagSetIds(2);
    ids.remember(
      new Map([
        ['a', 1],
        ['b', 2],
      ]),
    );
    expect(ids.get('a')).to.equal(1);
    ids.remember(new Map([['c', 3]])); // young was full: {a, b} become old
    expect([ids.get('a'), ids.get('b'), ids.get('c')]).to.deep.equal([1, 2, 3]); // hits on old move forward
    ids.remember(
      new Map([
        ['d', 4],
        ['e', 5],
        ['f', 6],
      ]),
    );
    expect(ids.get('a')).to.equal(undefined);
    expect(ids.get('f')).to.equal(6);
    ids.clear();
    expect(ids.get('f')).to.equal(undefined);
  });

  it('queues records FIFO with batch takes', () => {
    const q = new RecordDeque();
    for (let i = 0; i < 5000; i++) q.push(rec({ id: String(i) }));
    expect(q.take(3).map((r) => r.id)).to.deep.equal(['0', '1', '2']);
    let n = 3;
    while (q.length) for (const r of q.take(700)) expect(r.id).to.equal(String(n++));
    expect(n).to.equal(5000);
    expect(q.take(10)).to.deep.equal([]);
  });
});
