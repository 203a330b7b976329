import type { DependencyContainer } from 'tsyringe';
import type { z } from 'zod';
import type { WorkspaceLimits } from '../config/limits';
import type { GatewayPlugin } from '../core/plugin-contract';
import { markCopy } from './package-copy';
import type { ServiceOf, TOKENS } from './tokens';

/** A shared service by its TOKENS name. */
export type ServiceName = Exclude<keyof typeof TOKENS, 'PluginOptions'>;
/** The shared services a plugin injects, each under a name of the plugin's choosing. */
export type Injection = Readonly<Record<string, ServiceName>>;
/** What `inject` hands to create(): each name bound to its service, typed by its token. */
export type Injected<I extends Injection> = { [K in keyof I]: ServiceOf<(typeof TOKENS)[I[K]]> };

/** How a plugin is created from its YAML entry: name, an options schema, the services it injects, and a factory. */
export interface PluginDefinition<O = unknown, I extends Injection = Injection> {
  name: string;
  /** The plugin API version this plugin was written against (PLUGIN_API_VERSION); a mismatch stops start-up. */
  apiVersion?: string;
  /** zod schema of the YAML `options:` block; defaults are applied before create() sees them. */
  optionsSchema?: z.ZodType<O>;
  /** What it needs; checked when the pipeline loads (start and check-config), which fails naming the plugin. */
  requires?: {
    /** Plugins that must be in the pipeline too. */
    plugins?: readonly string[];
    /** Shared services it resolves from the container itself, by TOKENS name (`inject` lists its own). */
    services?: readonly ServiceName[];
  };
  /**
   * The shared services create() receives, e.g. `{ cost: 'RequestCost' }`: start-up fails, naming the plugin, when
   * one is not registered.
   */
  inject?: I;
  /** Where it must sit: plugins that, when also listed, must come after it (`before`) or before it (`after`). */
  order?: { before?: readonly string[]; after?: readonly string[] };
  /**
   * The workspaces[].limits settings it enforces: a workspace setting one while no plugin that enforces it is in
   * the pipeline stops start-up (the limit would silently do nothing).
   */
  enforces?: readonly (keyof WorkspaceLimits)[];
  /**
   * Builds the plugin from its validated options and the services it injects. `container` is its own child
   * container, holding TOKENS.PluginOptions and every shared service.
   */
  create(container: DependencyContainer, options: O, services: Injected<I>): GatewayPlugin | Promise<GatewayPlugin>;
}

/** Type-checks a plugin definition, and marks it with the copy of Tollgate that made it (contracts/package-copy.ts). */
export function definePlugin<O, I extends Injection = Record<never, never>>(
  definition: PluginDefinition<O, I>,
): PluginDefinition<O, I> {
  return markCopy(definition);
}

/** Every service a definition needs: those it injects and those it resolves itself. */
export function servicesNeeded(definition: PluginDefinition<unknown>): ServiceName[] {
  return [...new Set([...(definition.requires?.services ?? []), ...Object.values(definition.inject ?? {})])];
}
