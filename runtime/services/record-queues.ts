import type { RecordQueuesService } from '../../core/services';
import type { StorageLogger, UsageStore } from '../../storage/store';
import { UsageWriteQueue } from '../../storage/write-queue';

/** TOKENS.RecordQueues, plus the queues it opened (their depth and spill are metrics). */
export interface RecordQueues extends RecordQueuesService {
  opened(): readonly UsageWriteQueue[];
}

/** TOKENS.RecordQueues over a store: each queue batches, retries and spills its records (storage/write-queue.ts). */
export function recordQueuesOver(
  store: Pick<UsageStore, 'insertBatch'> & Partial<Pick<UsageStore, 'quarantine'>>,
  logger: StorageLogger,
): RecordQueues {
  const opened: UsageWriteQueue[] = [];
  return {
    open: (options) => {
      const queue = new UsageWriteQueue(store, { ...options, logger });
      opened.push(queue);
      return queue;
    },
    opened: () => opened,
  };
}
