/**
 * COPY ... FROM STDIN for the PostgreSQL store: rows in COPY's text format, sent as one CopyData message through
 * pg's submittable interface (client.query(submittable) hands the connection to submit(); pg then calls the
 * handle* methods below as the server answers). A batch is in memory already, so it goes as one message and needs
 * no stream (pg-copy-streams).
 */
import type { PoolClient } from 'pg';
import type { SqlValue } from './codec';

const SPECIAL = /[\\\n\r\t]/g;
const ESCAPES: Record<string, string> = { '\\': '\\\\', '\n': '\\n', '\r': '\\r', '\t': '\\t' };

/** One value in COPY's text format: \N for NULL, t/f, numbers in decimal, text with \, tab, CR and LF escaped. */
function field(v: SqlValue): string {
  if (v === null) return '\\N';
  if (typeof v === 'string') return v.replace(SPECIAL, (ch) => ESCAPES[ch]);
  if (typeof v === 'boolean') return v ? 't' : 'f';
  return String(v);
}

/** Rows in COPY's text format: one line each, fields separated by tabs. */
function copyText(rows: readonly (readonly SqlValue[])[]): string {
  let out = '';
  for (const row of rows) out += row.map(field).join('\t') + '\n';
  return out;
}

interface Connection {
  query(text: string): void;
  sendCopyFromChunk(chunk: Buffer): void;
  endCopyFrom(): void;
  sendCopyFail(msg: string): void;
}

/** A COPY FROM STDIN whose data is known before it starts. */
class CopyIn {
  private rowCount = 0;
  readonly done: Promise<number>;
  private settle!: { resolve: (n: number) => void; reject: (e: Error) => void };

  constructor(
    private readonly text: string,
    private readonly data: Buffer,
  ) {
    this.done = new Promise((resolve, reject) => (this.settle = { resolve, reject }));
  }

  submit(connection: Connection): void {
    connection.query(this.text);
  }

  handleCopyInResponse(connection: Connection): void {
    if (this.data.length) connection.sendCopyFromChunk(this.data);
    connection.endCopyFrom();
  }

  handleCommandComplete(msg: { text: string }): void {
    this.rowCount = Number(/\d+$/.exec(msg.text)?.[0] ?? 0);
  }

  // Like pg's own queries: an error settles at once (the server's ReadyForQuery, if any, follows), and so does a
  // connection lost or a client that cannot take queries, for which pg calls handleError alone.
  handleError(err: Error): void {
    this.settle.reject(err);
  }

  handleReadyForQuery(): void {
    this.settle.resolve(this.rowCount);
  }

  // A COPY FROM answers none of these; pg calls them only for other statements.
  handleRowDescription(): void {}
  handleDataRow(): void {}
  handleEmptyQuery(): void {}
  handlePortalSuspended(): void {}
  handleCopyData(): void {}
}

/** `COPY table (columns) FROM STDIN` with `rows`, in client `c`'s transaction; resolves to the rows copied. */
export function copyRows(
  c: PoolClient,
  table: string,
  columns: readonly string[],
  rows: readonly (readonly SqlValue[])[],
): Promise<number> {
  const copy = new CopyIn(`COPY ${table} (${columns.join(', ')}) FROM STDIN`, Buffer.from(copyText(rows)));
  void c.query(copy as never);
  return copy.done;
}
