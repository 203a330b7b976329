/** Public surface of the storage layer. */
export * from './store';
export {
  openStore,
  parseStorageUrl,
  redactStorageUrl,
  StoreNotFoundError,
  type OpenStoreOptions,
  type StorageTarget,
} from './open';
export { SqliteUsageStore, type SqliteStoreOptions } from './sqlite-store';
export { PostgresUsageStore, type PostgresStoreOptions } from './postgres-store';
export { UsageWriteQueue, type WriteQueueOptions, type WriteQueueStats } from './write-queue';
export type { QuarantinedRecord } from './quarantine';
export { planUsageQuery, type QueryPath, type UsagePlan } from './query/plan';
