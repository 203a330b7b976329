import { basename, join } from 'node:path';
import type { RecordQueuesService } from '../contracts/services';
import type { StorageLogger, UsageStore } from '../storage/store';
import { UsageWriteQueue } from '../storage/write-queue';
import { WrittenMark } from './written-mark';

/** TOKENS.RecordQueues, plus the queues it opened (their depth and spill are metrics). */
export interface RecordQueues extends RecordQueuesService {
  opened(): readonly UsageWriteQueue[];
}

type Writer = Pick<UsageStore, 'insertBatch'> & Partial<Pick<UsageStore, 'quarantine'>>;

/**
 * TOKENS.RecordQueues over a store: each queue batches, retries and spills its records (storage/write-queue.ts);
 * `spillFallbackDir` (storage.spill_fallback) holds the spill file of each queue whose own cannot be written.
 */
export function recordQueuesOver(store: Writer, logger: StorageLogger, spillFallbackDir?: string): RecordQueues {
  const opened: UsageWriteQueue[] = [];
  const mark = new WrittenMark(() =>
    opened.every((q) => {
      const s = q.stats();
      return s.inMemory === 0 && !s.spillPending;
    }),
  );
  // Every way a record leaves a queue for good passes here: stored, or quarantined for its content.
  const writer: Writer = {
    insertBatch: async (records) => {
      const result = await store.insertBatch(records);
      mark.written(records);
      return result;
    },
    ...(store.quarantine && {
      quarantine: async (entries) => {
        await store.quarantine!(entries);
        mark.written(entries.map((e) => e.recordId));
      },
    }),
  };
  return {
    open: (options) => {
      const spillFallbackPath = spillFallbackDir && join(spillFallbackDir, basename(options.spillPath));
      const queue = new UsageWriteQueue(writer, { ...options, spillFallbackPath, logger });
      opened.push(queue);
      return {
        enqueue: (record) => {
          mark.enqueued(record);
          queue.enqueue(record);
        },
        close: () => queue.close(),
      };
    },
    opened: () => opened,
    writtenBefore: () => mark.before(),
  };
}
