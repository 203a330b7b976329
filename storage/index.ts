/** Public surface of the storage layer. */
export * from './store';
export { openStore, parseStorageUrl, redactStorageUrl, StoreNotFoundError } from './open';
export { UsageWriteQueue } from './write-queue';
export { planUsageQuery, type UsagePlan } from './query/plan';
