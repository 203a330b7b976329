import type { Logger } from 'pino';
import type { DependencyContainer } from 'tsyringe';
import type { GatewayConfig } from '../config/schema';
import type { LimitStore, WorkspaceLimitsService } from './limit-store';
import type { Clock } from './clock';
import type {
  BudgetLedgerService,
  KeyRingService,
  PriceLookup,
  ProviderLookup,
  RecordQueuesService,
  RequestCostService,
  UsageStoreService,
} from './services';

declare const serviceType: unique symbol;

/**
 * A DI token: a tsyringe injection token (a symbol, so `container.resolve(token)` works as with any symbol) that
 * also carries the type of the service registered under it, for resolveService and registerService.
 */
export type Token<T> = symbol & { readonly [serviceType]?: T };

/** The type of the service behind a token. */
export type ServiceOf<K> = K extends Token<infer T> ? T : never;

const token = <T>(name: string) => Symbol.for(`tollgate.${name}`) as Token<T>;

/** DI tokens of the shared services, each typed by the view a plugin gets (contracts/services.ts, contracts/limit-store.ts). */
export const TOKENS = {
  /** The validated GatewayConfig. */
  Config: token<GatewayConfig>('Config'),
  /** Folder of the config file: relative paths in plugin options resolve against it. */
  ConfigDir: token<string>('ConfigDir'),
  /** The root pino logger. */
  Logger: token<Logger>('Logger'),
  /** A plugin's validated options, registered in the plugin's own child container. */
  PluginOptions: token<unknown>('PluginOptions'),
  /** The deployed providers. */
  Providers: token<ProviderLookup>('Providers'),
  /** Workspaces and gateway keys. */
  KeyRing: token<KeyRingService>('KeyRing'),
  /** The usage store (SQLite or PostgreSQL). */
  UsageStore: token<UsageStoreService>('UsageStore'),
  /** Queues that write usage records to the usage store off the request path. */
  RecordQueues: token<RecordQueuesService>('RecordQueues'),
  /** The time budget periods are counted in (rate windows use the limit store's own clock). */
  Clock: token<Clock>('Clock'),
  /** The price catalog. */
  PriceCatalog: token<PriceLookup>('PriceCatalog'),
  /** Cost of a request from its settled usage, computed once per request. */
  RequestCost: token<RequestCostService>('RequestCost'),
  /** Counters behind rate limits, stream slots and budgets (memory or Redis). */
  LimitStore: token<LimitStore>('LimitStore'),
  /** The workspaces' limits with the limit store and its failure policy, shared by every limit plugin. */
  WorkspaceLimits: token<WorkspaceLimitsService>('WorkspaceLimits'),
  /** Budgets seen by this instance with their counters, for the admin API. */
  BudgetLedger: token<BudgetLedgerService>('BudgetLedger'),
  /** Makes a file path this process's own (in multi-core mode each worker process gets its own file). */
  ProcessFilePath: token<(path: string) => string>('ProcessFilePath'),
} as const;

/** The service registered under `token`, typed by the token. */
export function resolveService<T>(container: DependencyContainer, token: Token<T>): T {
  return container.resolve<T>(token);
}

/** Registers `value` as the service behind `token`; the token's type checks it. */
export function registerService<T>(container: DependencyContainer, token: Token<T>, value: T): void {
  container.register(token, { useValue: value });
}
