/**
 * A reader thread for test/unit/reader-thread.test.ts: the same protocol as the admin API's (serveReads), with reads
 * whose cost the test chooses. `count` runs one SQLite statement that counts to n (a single native call that nothing
 * can interrupt, like a long grouping); `hog` keeps allocating until the heap limit stops the thread. `chunks` is a
 * streamed read of n chunks (failing at chunk `failAt`), and `progress` says how many it made and whether it returned.
 */
import Database from 'better-sqlite3';
import { serveReads } from '../../storage/serve-reads';

const db = new Database(':memory:');
const count = db
  .prepare('WITH RECURSIVE c (x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < ?) SELECT count(*) AS n FROM c')
  .pluck();
const kept: unknown[] = [];
const made = { produced: 0, returned: false };

serveReads({
  count: async (n: number) => count.get(n),
  echo: async (value: unknown) => value,
  bytes: async (text: string) => Buffer.from(text),
  chunks: async function* ({ n, failAt }: { n: number; failAt?: number }) {
    Object.assign(made, { produced: 0, returned: false });
    try {
      for (let i = 0; i < n; i++) {
        if (i === failAt) throw new Error(`chunk ${i} failed`);
        made.produced++;
        yield Buffer.from(`chunk ${i}`);
      }
    } finally {
      made.returned = true;
    }
  },
  progress: async () => ({ ...made }),
  hog: async () => {
    for (;;) kept.push(new Array(1 << 16).fill(kept.length));
  },
});
