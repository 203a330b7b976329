/**
 * Tollgate's public API (`import ... from 'tollgate'`): everything a plugin or a provider module may use,
 * versioned by PLUGIN_API_VERSION. Anything not exported here is internal and may change in any release.
 * Guides: docs/plugins.md and docs/providers.md. Test helpers: 'tollgate/testing' (testing/index.ts).
 */

export { PLUGIN_API_VERSION } from '../contracts/api-version';

// Plugins
export { definePlugin, type PluginDefinition } from '../contracts/plugin-definition';
export type { GatewayPlugin } from '../core/plugin-contract';
export type { GatewayContext, Workspace } from '../core/context';
export { ERROR_CODES, GatewayError, type ErrorCode } from '../core/errors';
export type { EndpointSpec } from '../core/endpoints';
export { MAX_MODEL_LENGTH } from '../intake/body';
export { truncate, TRUNCATION_MARKER } from '../core/truncate';
export { BoundedCache } from '../plugin-kit/bounded-cache';
export { codePointCompare } from '../plugin-kit/code-point-order';
export { budgetReadsOf, tagSpendPage } from '../services/tag-spend-page';
export { addressKey, FailedKeyTracker, type LockoutOptions } from '../plugin-kit/lockout';

// Provider modules
export {
  apiKeyHeader,
  bearer,
  defineProvider,
  noAuth,
  type AuthScheme,
  type ProviderInstance,
  type ProviderModelPrice,
  type ProviderModule,
  type Tokenizer,
  type UpstreamTimeouts,
} from '../core/provider-contract';
export { tiktokenTokenizer } from '../providers/tokenizer';
export { anthropicUsageParser } from '../providers/wire/messages';
export { openaiUsageParser } from '../providers/openai/usage';
export { openrouterUsageParser } from '../providers/openrouter/usage';
export { perplexityUsageParser } from '../providers/perplexity/usage';

// The usage vocabulary shared by both
export {
  type BatchJobAnswer,
  type BatchResultLine,
  type BatchWire,
  type EndpointKey,
  type SseEvent,
  type StreamUsageAccumulator,
  type Usage,
  type UsageParser,
} from '../core/usage';
export {
  MEDIA_UNIT_FIELDS,
  PROVIDER_REPORTED,
  type CostProvenance,
  type PicoUsd,
  type UsageRecord,
  type UsageSource,
} from '../records/usage-record';
export { RESERVED_TAG_KEYS, UNTAGGED } from '../records/dimensions';
export { OUTPUT_TOKEN_FIELDS, outputLimitField, requestedOutputTokens, tokenCount } from '../plugin-kit/output-tokens';
export { withJsonField } from '../plugin-kit/body-field';
export { countCodePoints, requestedImages, typicalSeconds } from '../providers/wire/media-request';
export { streamIncomplete } from '../providers/usage-settle';
export { formatUsd, parseUsd } from '../pricing/money';

// Dependency injection: tokens and the public views of the services behind them
export { registerService, resolveService, TOKENS, type ServiceOf, type Token } from '../contracts/tokens';
export type {
  BudgetCursor,
  BudgetLedgerService,
  BudgetReads,
  BudgetSource,
  BudgetStatus,
  KeyGrant,
  KeyRingService,
  PresentedKey,
  PricedUsage,
  PriceLookup,
  ProviderLookup,
  RecordQueue,
  RecordQueueOptions,
  RecordQueuesService,
  RequestCostService,
  TagSpendQuery,
  UsageStoreService,
} from '../contracts/services';
export type { BatchJob, BatchJobsService } from '../records/batch-job';
export type { Clock } from '../contracts/clock';
export type {
  Bucket,
  BucketState,
  BudgetCheck,
  BudgetReservation,
  BudgetState,
  ImmediateLimitOps,
  LeaseRenewer,
  LimitScope,
  LimitStore,
  TakeResult,
  WorkspaceLimitsService,
} from '../contracts/limit-store';
export type { GatewayConfig } from '../config/schema';
export type { BudgetConfig, BudgetPolicy, RateLimits, WorkspaceLimits } from '../config/limits';
export type { DependencyContainer } from 'tsyringe';
export type { Logger } from 'pino';

/** The zod Tollgate validates options with: use it for optionsSchema so schema and loader always agree. */
export { z } from 'zod';
/** Wraps a number or boolean option schema so that a value from an ${ENV} reference (text) is accepted. */
export { fromText } from '../config/from-text';
