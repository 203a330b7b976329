import type { DependencyContainer } from 'tsyringe';
import type { z } from 'zod';
import type { WorkspaceLimits } from '../config/limits';
import type { GatewayContext } from './context';
import { markCopy } from './package-copy';
import type { TOKENS } from './tokens';
import type { SseEvent } from './usage';

type Awaitable<T> = T | Promise<T>;

/**
 * A gateway plugin: an object with any of the phase hooks below. Phases run in this order, and within a phase
 * plugins run in the order of the YAML `plugins:` list.
 *
 *  onRequest       path, method and headers known; body not read yet. Authenticate, tag, admit or refuse.
 *  beforeUpstream  body parsed, provider and model resolved. Check limits, edit ctx.upstreamHeaders.
 *  onResponse      upstream status and headers known (and the whole body for non-streamed JSON). Add headers
 *                  with ctx.responseHeaders. Nothing has been sent to the client yet.
 *  onStreamEvent   each SSE event of a streamed response, after its bytes were already written to the client:
 *                  synchronous, cheap, cannot delay or change the stream.
 *  onComplete      the exchange is over (answered, failed or aborted); usage known. Runs off the request path, in
 *                  reverse list order, for the plugins whose onRequest or beforeUpstream ran (or that have neither).
 *
 * Error policy: throwing a GatewayError in onRequest, beforeUpstream or onResponse answers the request with that
 * error; any other exception becomes a 500 plugin_error (the process stays up). Exceptions in onStreamEvent and
 * onComplete are logged and never reach the client.
 */
export interface GatewayPlugin {
  readonly name: string;
  onRequest?(ctx: GatewayContext): Awaitable<void>;
  beforeUpstream?(ctx: GatewayContext): Awaitable<void>;
  onResponse?(ctx: GatewayContext): Awaitable<void>;
  onStreamEvent?(ctx: GatewayContext, event: SseEvent): void;
  onComplete?(ctx: GatewayContext): Awaitable<void>;
  /** Called once on shutdown after the last request finished: flush queues, close connections. */
  close?(): Awaitable<void>;
}

/** How a plugin is created from its YAML entry: name, an options schema, and a factory. */
export interface PluginDefinition<O = unknown> {
  name: string;
  /** The plugin API version this plugin was written against (PLUGIN_API_VERSION); a mismatch stops start-up. */
  apiVersion?: string;
  /** zod schema of the YAML `options:` block; defaults are applied before create() sees them. */
  optionsSchema?: z.ZodType<O>;
  /** What it needs; checked when the pipeline loads (start and check-config), which fails naming the plugin. */
  requires?: {
    /** Plugins that must be in the pipeline too. */
    plugins?: readonly string[];
    /** Shared services it resolves, by TOKENS name (start-up fails if one is not registered). */
    services?: readonly Exclude<keyof typeof TOKENS, 'PluginOptions'>[];
  };
  /** Where it must sit: plugins that, when also listed, must come after it (`before`) or before it (`after`). */
  order?: { before?: readonly string[]; after?: readonly string[] };
  /**
   * The workspaces[].limits settings it enforces: a workspace setting one while no plugin that enforces it is in
   * the pipeline stops start-up (the limit would silently do nothing).
   */
  enforces?: readonly (keyof WorkspaceLimits)[];
  /** Builds the plugin. `container` is a child container holding TOKENS.PluginOptions and shared services. */
  create(container: DependencyContainer, options: O): GatewayPlugin | Promise<GatewayPlugin>;
}

/** Type-checks a plugin definition, and marks it with the copy of Tollgate that made it (core/package-copy.ts). */
export function definePlugin<O>(definition: PluginDefinition<O>): PluginDefinition<O> {
  return markCopy(definition);
}
