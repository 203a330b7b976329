/**
 * GET /api/usage.csv?limit=all, the export of every group, as a client sees it on the wire (a raw socket, the HTTP
 * chunks parsed): every group of the JSON API in its order, a chunk of at most CSV_CHUNK_LINES lines at a time, an
 * aborted download, PostgreSQL cut in the middle of one, and the bound on exports at once (admin.exports_max). Against SQLite always and PostgreSQL with DATABASE_URL.
 */
import { expect } from 'chai';
import { connect } from 'node:net';
import { Client } from 'pg';
import { parse } from 'node:querystring';
import { CSV_CHUNK_LINES } from '../../admin/dashboard/csv';
import { usageParamsFrom } from '../../admin/query-params';
import { AdminReads } from '../../admin/reads/admin-reads';
import { GatewayError } from '../../core/errors';
import { adminGet } from '../helpers/admin';
import { csvRows } from '../helpers/csv';
import { startTestGateway, TEST_ADMIN_TOKEN, type TestGateway } from '../helpers/gateway';
import { usageRecord, ZERO_BUCKETS } from '../helpers/records';
import { requirePostgres } from '../helpers/services';
import { postgresThroughRelay } from '../helpers/tcp-proxy';
import { TestUpstream } from '../helpers/upstream';

const DAY = 86_400_000;
const CUSTOMERS = 1600;
const MODELS = ['gpt-4o-mini', 'gpt-4o'];
/** Groups in the store: every customer with every model. */
const GROUPS = CUSTOMERS * MODELS.length;

/** One record per customer and model, at costs with many ties (the order then rests on requests and names). */
function records(now: number) {
  return MODELS.flatMap((model, m) =>
    Array.from({ length: CUSTOMERS }, (_, i) =>
      usageRecord({
        id: `stream-${m}-${i}`,
        ts: now - 3_600_000 - i,
        keyId: 'test',
        model,
        servedModel: model,
        inputTokens: 10 + (i % 7),
        outputTokens: 5,
        ...ZERO_BUCKETS,
        costPico: i % 50 === 0 ? null : BigInt(1000 + ((i * 7919 + m) % 400)),
        provenance: i % 50 === 0 ? 'unpriced' : 'measured',
        priceVersion: 'test',
        tags: { suite: 'stream', customer_id: i % 97 === 0 ? `c "${i}", quoted` : `c-${i}` },
      }),
    ),
  );
}

interface Wire {
  status: number;
  /** The body's HTTP chunks as sent. */
  chunks: string[];
  /** The last (empty) chunk came: the body is whole. */
  complete: boolean;
}

/**
 * GET `path` on a raw socket, the chunked body parsed as it arrives. `onChunk` sees each chunk (its index) and may
 * act: 'abort' closes the connection there.
 */
function getChunked(base: string, path: string, onChunk?: (i: number) => 'abort' | void): Promise<Wire> {
  const { hostname, port } = new URL(base);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), hostname);
    let buf = Buffer.alloc(0);
    let status = 0;
    let chunked = false;
    const wire: Wire = { status: 0, chunks: [], complete: false };
    let done = false;
    const finish = () => {
      if (done) return;
      done = true;
      // A body with a length (an error answer) is one chunk, whole when the server closes.
      if (status && !chunked) wire.chunks.push(buf.toString());
      resolve({ ...wire, status });
    };
    socket.on('data', (data: Buffer) => {
      buf = Buffer.concat([buf, data]);
      if (!status) {
        const end = buf.indexOf('\r\n\r\n');
        if (end < 0) return;
        const head = buf.subarray(0, end).toString();
        status = Number(head.split(' ')[1]);
        chunked = /transfer-encoding: chunked/i.test(head);
        buf = buf.subarray(end + 4);
      }
      while (chunked) {
        const eol = buf.indexOf('\r\n');
        if (eol < 0) return;
        const size = parseInt(buf.subarray(0, eol).toString(), 16);
        if (buf.length < eol + 2 + size + 2) return;
        if (size === 0) {
          wire.complete = true;
          socket.destroy();
          return finish();
        }
        wire.chunks.push(buf.subarray(eol + 2, eol + 2 + size).toString());
        buf = buf.subarray(eol + 2 + size + 2);
        if (onChunk?.(wire.chunks.length - 1) === 'abort') {
          socket.destroy();
          return finish();
        }
      }
    });
    socket.on('error', reject);
    socket.on('close', finish);
    socket.write(
      `GET ${path} HTTP/1.1\r\nHost: ${hostname}\r\nAuthorization: Bearer ${TEST_ADMIN_TOKEN}\r\nConnection: close\r\n\r\n`,
    );
  });
}

/** The JSON API's groups, every page of them, as the CSV's first columns. */
async function jsonGroups(gw: TestGateway, q: string): Promise<string[][]> {
  const out: string[][] = [];
  for (let offset: number | null = 0; offset !== null;) {
    const page: any = await adminGet(gw, `/api/usage?${q}&limit=1000&offset=${offset}`);
    for (const r of page.rows)
      out.push([
        r.group.customer_id,
        r.group.model,
        String(r.requests),
        String(r.input_tokens),
        String(r.output_tokens),
        r.cost_usd ?? '',
        r.cost_status,
      ]);
    offset = page.next_offset;
  }
  return out;
}

/** The same columns of the CSV's rows, and the header's first ones. */
function csvGroups(text: string): { header: string[]; rows: string[][] } {
  const [header, ...rows] = csvRows(text);
  const at = ['customer_id', 'model', 'requests', 'input_tokens', 'output_tokens', 'cost_usd', 'cost_status'].map(
    (name) => header.indexOf(name),
  );
  return { header, rows: rows.map((r) => at.map((i) => r[i])) };
}

for (const backend of ['SQLite', 'PostgreSQL'] as const) {
  describe(`usage.csv of every group, streamed (${backend})`, function () {
    this.timeout(120_000);
    let upstream: TestUpstream;
    let gw: TestGateway;
    let pgUrl: string | undefined;
    const schema = `tg_csv_stream_${process.pid}_${Date.now().toString(36)}`;
    let q: string;

    before(async function () {
      const storage =
        backend === 'PostgreSQL'
          ? `storage: { url: "${(pgUrl = await requirePostgres(this, 'the streamed CSV on PostgreSQL'))}", schema: ${schema} }`
          : '';
      upstream = new TestUpstream();
      await upstream.start();
      gw = await startTestGateway(upstream.url, storage);
      const now = Date.now();
      await gw.gateway.store.insertBatch(records(now));
      q = `from=${now - DAY}&to=${now}&filter[suite]=stream&group_by=customer_id,model`;
    });

    after(async () => {
      await gw?.stop();
      await upstream?.stop();
      if (!pgUrl) return;
      const c = new Client({ connectionString: pgUrl });
      await c.connect();
      await c.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
      await c.end();
    });

    it('holds every group of the JSON API, in its order, sent a chunk of lines at a time', async () => {
      const wire = await getChunked(gw.adminUrl!, `/api/usage.csv?${q}&limit=all`);
      expect(wire.status, wire.chunks[0]?.slice(0, 300)).to.equal(200);
      expect(wire.complete).to.equal(true);
      const { header, rows } = csvGroups(wire.chunks.join(''));
      expect(header.slice(0, 3)).to.deep.equal(['customer_id', 'model', 'requests']);
      expect(header.slice(-3)).to.deep.equal(['range_from', 'range_to', 'filter[suite]']);
      expect(rows).to.have.length(GROUPS);
      expect(rows).to.deep.equal(await jsonGroups(gw, q));
      // The export never sat whole in one write: whole lines, at most CSV_CHUNK_LINES of them per chunk.
      const lines = wire.chunks.map((c) => c.split('\r\n').length - 1);
      expect(wire.chunks.every((c) => c.endsWith('\r\n'))).to.equal(true);
      expect(Math.max(...lines)).to.equal(CSV_CHUNK_LINES);
      expect(wire.chunks).to.have.length(Math.ceil((GROUPS + 1) / CSV_CHUNK_LINES));
    });

    it('past admin.exports_max, an export of every group is refused 429 concurrency_limited with Retry-After', async () => {
      // On the gateway's reader thread and connection, the exports held between two chunks (a client not reading).
      const reads = AdminReads.open(gw.gateway.store.readSource(), { timeoutMs: 60_000, exportsMax: 2 });
      try {
        const all = usageParamsFrom(parse(`${q}&limit=all`), { allowAll: true });
        const [first, second] = [reads.usageCsv(all), reads.usageCsv(all)];
        expect(await first.next()).to.be.instanceOf(Buffer);
        expect(await second.next()).to.be.instanceOf(Buffer);
        let refused: unknown;
        try {
          reads.usageCsv(all);
        } catch (err) {
          refused = err;
        }
        expect(refused).to.be.instanceOf(GatewayError);
        const err = refused as GatewayError;
        expect([err.code, err.status, err.type]).to.deep.equal(['concurrency_limited', 429, 'rate_limit_error']);
        expect(err.headers['retry-after']).to.match(/^\d+$/);
        expect(err.message).to.contain('admin.exports_max');
        // A page of groups is not an export of every group: it is answered meanwhile.
        const page = reads.usageCsv({ ...all, limit: 10 });
        expect(csvGroups(String(await page.next())).rows).to.have.length(11);
        // An export read to its end frees its slot, and so does one cancelled.
        while ((await first.next()) !== null);
        const third = reads.usageCsv(all);
        second.cancel();
        const fourth = reads.usageCsv(all);
        let text = '';
        for (let chunk = await fourth.next(); chunk !== null; chunk = await fourth.next()) text += chunk.toString();
        expect(csvGroups(text).rows).to.have.length(GROUPS);
        third.cancel();
      } finally {
        await reads.close();
      }
    });

    it('a client that goes away mid-export leaves the gateway exporting whole for the next one', async () => {
      const aborted = await getChunked(gw.adminUrl!, `/api/usage.csv?${q}&limit=all`, () => 'abort');
      expect(aborted.status).to.equal(200);
      expect(aborted.complete).to.equal(false);
      expect(aborted.chunks).to.have.length(1);
      const next = await getChunked(gw.adminUrl!, `/api/usage.csv?${q}&limit=all`);
      expect(next.complete).to.equal(true);
      expect(csvGroups(next.chunks.join('')).rows).to.have.length(GROUPS);
    });
  });
}

describe('usage.csv of every group with PostgreSQL cut mid-export', function () {
  this.timeout(120_000);

  it('the groups are read a page at a time: a store cut mid-export cuts the download short of its end; cut before it, 503', async function () {
    const pgUrl = await requirePostgres(this, 'a store cut mid-export');
    const { relay, schema, storageYaml } = await postgresThroughRelay(pgUrl, 'tg_csv_cut');
    const upstream = new TestUpstream();
    await upstream.start();
    const gw = await startTestGateway(upstream.url, storageYaml);
    try {
      const now = Date.now();
      await gw.gateway.store.insertBatch(records(now));
      const path = `/api/usage.csv?from=${now - DAY}&to=${now}&filter[suite]=stream&group_by=customer_id,model&limit=all`;
      const whole = await getChunked(gw.adminUrl!, path);
      expect(whole.complete).to.equal(true);

      // Each page of the export's cursor takes a round trip of 400 ms: the store is cut while the second is read.
      relay.delay(200);
      const cut = await getChunked(gw.adminUrl!, path, (i) => void (i === 0 && relay.cut()));
      expect(cut.status).to.equal(200);
      // No last (empty) chunk: a client sees a download that failed, never a shorter file that looks whole.
      expect(cut.complete).to.equal(false);
      expect(cut.chunks.length).to.be.within(1, whole.chunks.length - 1);
      expect(whole.chunks.join('').startsWith(cut.chunks.join(''))).to.equal(true);

      const refused = await getChunked(gw.adminUrl!, path);
      expect(refused.status).to.equal(503);
      expect(JSON.parse(refused.chunks.join('')).error.code).to.equal('store_unavailable');

      relay.restore();
      const again = await getChunked(gw.adminUrl!, path);
      expect(again.chunks.join('')).to.equal(whole.chunks.join(''));
    } finally {
      relay.restore();
      await gw.stop();
      await upstream.stop();
      await relay.stop();
      const c = new Client({ connectionString: pgUrl });
      await c.connect();
      await c.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
      await c.end();
    }
  });
});
