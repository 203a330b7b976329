import type { RecordQueuesService } from '../../core/services';
import type { StorageLogger, UsageStore } from '../../storage/store';
import { UsageWriteQueue } from '../../storage/write-queue';

/** TOKENS.RecordQueues over a store: each queue batches, retries and spills its records (storage/write-queue.ts). */
export function recordQueuesOver(store: Pick<UsageStore, 'insertBatch'> & Partial<Pick<UsageStore, 'quarantine'>>, logger: StorageLogger): RecordQueuesService {
  return { open: (options) => new UsageWriteQueue(store, { ...options, logger }) };
}
