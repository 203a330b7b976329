/**
 * Test helpers for plugin authors (`import ... from 'tollgate/testing'`): run a plugin's hooks against a fake
 * request, without a server or an upstream. The plugin is built exactly as at start-up (API version check,
 * options validated with its schema, its own child container) and its phases run with the gateway's error
 * policy, so what passes here behaves the same behind the proxy. See docs/plugins.md, "Testing a plugin".
 */
import 'reflect-metadata';
import { Writable } from 'node:stream';
import pino, { type Logger } from 'pino';
import { container as rootContainer } from 'tsyringe';
import { validate } from '../config/load';
import { PriceCatalog } from '../pricing/catalog';
import { RequestCost } from '../services/request-cost';
import { BUILTIN_PROVIDERS } from '../providers/registry';
import { openaiUsageParser } from '../providers/openai/usage';
import { tiktokenTokenizer } from '../providers/tokenizer';
import { GatewayContext, type Workspace } from '../core/context';
import { endpointByKey } from '../core/endpoints';
import type { GatewayError } from '../core/errors';
import { forwardableRequestHeaders } from '../core/headers';
import { PluginPipeline } from '../core/plugin-pipeline';
import type { GatewayPlugin } from '../core/plugin-contract';
import type { PluginDefinition } from '../contracts/plugin-definition';
import { instantiatePlugin } from '../runtime/loading/plugin-instance';
import { loadProviders } from '../runtime/loading/deployed-providers';
import { deployedProviderPrices } from '../runtime/loading/provider-prices';
import { bearer, type ProviderInstance, type ProviderModule } from '../core/provider-contract';
import { ProviderRegistry } from '../core/provider-routing';
import { registerService, TOKENS, type ServiceOf } from '../contracts/tokens';
import { LimitsContext } from '../services/workspace-limits';
import { recordQueuesOver } from '../services/record-queues';
import { BudgetLedger } from '../services/budget-ledger';
import { systemClock } from '../contracts/clock';
import type { EndpointKey, SseEvent, Usage } from '../core/usage';

/** What a fake request looks like; every field is optional. */
export interface TestContextInit {
  /** Default 'chat.completions'. */
  endpoint?: EndpointKey;
  /** Request headers. Credentials may be given: plugins cannot read them, exactly as in production. */
  headers?: Record<string, string>;
  /** Default workspace "default" and key id "test", as if auth had run; null leaves them unset (before auth). */
  workspace?: string | Workspace | null;
  keyId?: string | null;
  /** Default 127.0.0.1. */
  clientAddress?: string;
  tags?: Record<string, string>;
  /** A built-in slug, any other slug (an OpenAI-compatible stand-in), or a module; default: routed by model prefix. */
  provider?: string | ProviderModule;
  /** The parsed JSON request body; model and stream are read from it unless given. */
  json?: Record<string, unknown>;
  model?: string;
  stream?: boolean;
  /** The answer, for onResponse / onStreamEvent / onComplete tests. */
  status?: number;
  usage?: Usage;
  responseBody?: string | Buffer;
  error?: GatewayError;
  latencyMs?: number;
  /** Default: a logger that writes nothing (see captureLogs). */
  log?: Logger;
}

const DEFAULT_TIMEOUTS = { connectMs: 10_000, firstByteMs: 600_000, idleMs: 300_000 };
const builtinRegistry = new ProviderRegistry(
  Object.values(BUILTIN_PROVIDERS).map((m) => ({
    ...m,
    tokenizer: m.tokenizer ?? tiktokenTokenizer,
    timeouts: DEFAULT_TIMEOUTS,
  })),
);

/** A request context as the plugins see it once the core resolved the provider (before beforeUpstream). */
export function createTestContext(init: TestContextInit = {}): GatewayContext {
  const endpoint = endpointByKey(init.endpoint ?? 'chat.completions');
  const headers = Object.fromEntries(Object.entries(init.headers ?? {}).map(([k, v]) => [k.toLowerCase(), v]));
  const ctx = new GatewayContext(
    `test-${Math.random().toString(36).slice(2)}`,
    endpoint.method,
    endpoint.path,
    endpoint,
    headers,
    init.log ?? silentLogger(),
  );

  if (init.workspace !== null)
    ctx.workspace =
      typeof init.workspace === 'object'
        ? init.workspace
        : { id: init.workspace ?? 'default', name: init.workspace ?? 'default' };
  if (init.keyId !== null) ctx.keyId = init.keyId ?? 'test';
  ctx.clientAddress = init.clientAddress ?? '127.0.0.1';
  Object.assign(ctx.tags, init.tags);

  if (init.json) {
    ctx.json = init.json;
    ctx.body = Buffer.from(JSON.stringify(init.json));
    ctx.bodySize = ctx.body.length;
  }
  ctx.model = init.model ?? (typeof init.json?.model === 'string' ? init.json.model : undefined);
  ctx.stream = init.stream ?? init.json?.stream === true;
  ctx.provider = testProvider(init.provider, ctx.model);
  // As the core does: the provider's auth headers and the gateway key are held back from plugins.
  if (ctx.provider)
    forwardableRequestHeaders(headers, ctx.upstreamHeaders, [...ctx.provider.auth.headers, 'x-gateway-key']);

  ctx.status = init.status;
  ctx.usage = init.usage;
  if (init.responseBody !== undefined) ctx.responseBody = Buffer.from(init.responseBody);
  ctx.error = init.error;
  if (init.latencyMs !== undefined) ctx.latencyMs = init.latencyMs;
  return ctx;
}

function testProvider(provider: TestContextInit['provider'], model: string | undefined): ProviderInstance | undefined {
  if (typeof provider === 'object')
    return { ...provider, tokenizer: provider.tokenizer ?? tiktokenTokenizer, timeouts: DEFAULT_TIMEOUTS };
  if (provider === undefined) return model === undefined ? undefined : builtinRegistry.byModel(model);
  return (
    builtinRegistry.get(provider) ?? {
      slug: provider,
      displayName: provider,
      family: 'chat-completions',
      baseUrl: 'http://127.0.0.1:9/v1',
      modelPrefixes: [],
      auth: bearer(),
      endpoints: ['chat.completions', 'embeddings', 'models'],
      usage: openaiUsageParser,
      tokenizer: tiktokenTokenizer,
      timeouts: DEFAULT_TIMEOUTS,
    }
  );
}

/** Names of the shared services a test may replace (the keys of TOKENS, but PluginOptions). */
export type ServiceName = Exclude<keyof typeof TOKENS, 'PluginOptions'>;

/** Services by token name, each of the type its token carries. */
export type Services = { [K in ServiceName]?: ServiceOf<(typeof TOKENS)[K]> };

export interface PluginHarnessOptions {
  /** The plugin's YAML `options:` block, validated with its schema as at start-up. */
  options?: unknown;
  /**
   * The gateway's configuration, as gateway.config.yaml would give it (an object), validated as at start-up: its
   * pricing block prices requests, its providers and workspaces are deployed. Default: every setting's default.
   */
  config?: unknown;
  /** Provider modules written in code, deployed with the built-ins under these slugs; their own prices count too. */
  providers?: Record<string, ProviderModule>;
  /**
   * Services to register, by token name. Defaults: Logger (silent), ConfigDir (cwd), Config (`config`, validated),
   * Providers (the built-ins, the config's and `providers`), PriceCatalog (the bundled prices, the providers' own
   * and the config's pricing block, as at start-up), RequestCost (over those prices), ProcessFilePath
   * (paths unchanged), Clock (the wall clock), BudgetLedger (one of its own); when a LimitStore is given, WorkspaceLimits over it and the Config's
   * workspaces; when a UsageStore is given, RecordQueues writing to it.
   */
  services?: Services;
}

export interface PluginHarness {
  readonly plugin: GatewayPlugin;
  /** Runs a gating phase with the gateway's policy: a GatewayError passes through, any other exception becomes plugin_error. */
  run(phase: 'onRequest' | 'beforeUpstream' | 'onResponse', ctx: GatewayContext): Promise<void>;
  /** Feeds one SSE event (or just its data) to onStreamEvent; exceptions are logged and dropped, as in production. */
  streamEvent(ctx: GatewayContext, event: SseEvent | string): void;
  /** Runs onComplete whatever ran before; exceptions are logged and dropped, as in production. */
  complete(ctx: GatewayContext): Promise<void>;
  /**
   * A whole exchange: onRequest, beforeUpstream, onResponse, onComplete. A refusal ends it like the proxy does
   * (ctx.error and ctx.status set, onComplete runs if the plugin's admission hook ran) and is returned; undefined means the request went through.
   */
  exchange(ctx: GatewayContext): Promise<GatewayError | undefined>;
  close(): Promise<void>;
}

/** Builds a plugin from its definition as the loader does and wraps it in the gateway's phase runner. */
export async function createPluginHarness<O>(
  definition: PluginDefinition<O>,
  opts: PluginHarnessOptions = {},
): Promise<PluginHarness> {
  const container = rootContainer.createChildContainer();
  const given = opts.services ?? {};
  const config = given.Config ?? validate(opts.config ?? {}, 'createPluginHarness config');
  const configDir = given.ConfigDir ?? process.cwd();
  const providers = loadProviders(config, opts.providers);
  const prices =
    given.PriceCatalog ??
    new PriceCatalog(config.pricing, { baseDir: configDir, providerPrices: deployedProviderPrices(providers.list()) });
  const logger = given.Logger ?? silentLogger();
  const services: Services = {
    Logger: logger,
    ConfigDir: configDir,
    Config: config,
    Providers: providers,
    PriceCatalog: prices,
    RequestCost: new RequestCost(prices),
    ProcessFilePath: (path) => path,
    Clock: systemClock,
    BudgetLedger: new BudgetLedger(),
    ...(given.LimitStore && {
      WorkspaceLimits: new LimitsContext(config, given.LimitStore, config.limit_store, logger),
    }),
    ...(given.UsageStore && { RecordQueues: recordQueuesOver(given.UsageStore, logger) }),
    ...given,
  };
  for (const name of Object.keys(services) as ServiceName[]) registerService(container, TOKENS[name], services[name]);
  const plugin = await instantiatePlugin(
    definition as PluginDefinition<unknown>,
    opts.options,
    container,
    'plugins[0]',
  );
  const pipeline = new PluginPipeline([plugin]);

  const exchange = async (ctx: GatewayContext): Promise<GatewayError | undefined> => {
    let refusal: GatewayError | undefined;
    try {
      await pipeline.run('onRequest', ctx);
      await pipeline.run('beforeUpstream', ctx);
      ctx.sentUpstream = true;
      ctx.status ??= 200;
      await pipeline.run('onResponse', ctx);
    } catch (err) {
      refusal = err as GatewayError; // the pipeline only ever throws GatewayError
      ctx.error = refusal;
      ctx.status = refusal.status;
    }
    await pipeline.complete(ctx);
    return refusal;
  };

  return {
    plugin,
    run: async (phase, ctx) => pipeline.run(phase, ctx),
    streamEvent: (ctx, event) => pipeline.streamEvent(ctx, typeof event === 'string' ? { data: event } : event),
    complete: (ctx) => pipeline.complete(ctx, true),
    exchange,
    close: () => pipeline.close(),
  };
}

/** A logger that keeps every line it writes as a parsed object, for asserting on what a plugin logged. */
export function captureLogs(level = 'debug'): { logger: Logger; lines: Record<string, unknown>[] } {
  const lines: Record<string, unknown>[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const line of chunk.toString('utf8').split('\n')) if (line) lines.push(JSON.parse(line));
      done();
    },
  });
  return { logger: pino({ level }, sink), lines };
}

function silentLogger(): Logger {
  return pino({ level: 'silent' });
}
