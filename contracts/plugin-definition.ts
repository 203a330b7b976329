import type { DependencyContainer } from 'tsyringe';
import type { z } from 'zod';
import type { WorkspaceLimits } from '../config/limits';
import type { GatewayPlugin } from '../core/plugin-contract';
import { markCopy } from './package-copy';
import type { TOKENS } from './tokens';

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

/** Type-checks a plugin definition, and marks it with the copy of Tollgate that made it (contracts/package-copy.ts). */
export function definePlugin<O>(definition: PluginDefinition<O>): PluginDefinition<O> {
  return markCopy(definition);
}
