/**
 * A reader thread for test/unit/reader-thread.test.ts: the same protocol as the admin API's (serveReads), with reads
 * whose cost the test chooses. `count` runs one SQLite statement that counts to n (a single native call that nothing
 * can interrupt, like a long grouping); `hog` keeps allocating until the heap limit stops the thread.
 */
import Database from 'better-sqlite3';
import { serveReads } from '../../storage/reader-thread';

const db = new Database(':memory:');
const count = db
  .prepare('WITH RECURSIVE c (x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < ?) SELECT count(*) AS n FROM c')
  .pluck();
const kept: unknown[] = [];

serveReads({
  count: async (n: number) => count.get(n),
  echo: async (value: unknown) => value,
  bytes: async (text: string) => Buffer.from(text),
  hog: async () => {
    for (;;) kept.push(new Array(1 << 16).fill(kept.length));
  },
});
