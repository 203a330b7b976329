/** DI tokens of the shared services (tsyringe injection tokens stand in for interfaces). */
export const TOKENS = {
  /** The validated GatewayConfig. */
  Config: Symbol.for('tollgate.Config'),
  /** Folder of the config file: relative paths in plugin options resolve against it. */
  ConfigDir: Symbol.for('tollgate.ConfigDir'),
  /** The root pino logger. */
  Logger: Symbol.for('tollgate.Logger'),
  /** A plugin's validated options, registered in the plugin's own child container. */
  PluginOptions: Symbol.for('tollgate.PluginOptions'),
  /** The provider registry. */
  Providers: Symbol.for('tollgate.Providers'),
  /** Workspaces and gateway keys. */
  KeyRing: Symbol.for('tollgate.KeyRing'),
  /** The usage store (SQLite or PostgreSQL). */
  UsageStore: Symbol.for('tollgate.UsageStore'),
  /** The price catalog. */
  PriceCatalog: Symbol.for('tollgate.PriceCatalog'),
  /** Cost of a request from its settled usage (pricing/request-cost.ts), computed once per request. */
  RequestCost: Symbol.for('tollgate.RequestCost'),
  /** Counters behind rate limits, stream slots and budgets (memory or Redis). */
  LimitStore: Symbol.for('tollgate.LimitStore'),
  /** Budgets seen by this instance with their counters (plugins/budget/ledger.ts), for the admin API. */
  BudgetLedger: Symbol.for('tollgate.BudgetLedger'),
} as const;
