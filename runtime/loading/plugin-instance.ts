import type { DependencyContainer } from 'tsyringe';
import { apiVersionProblem } from '../../core/api-version';
import type { GatewayPlugin, PluginDefinition } from '../../core/plugin-contract';
import { registerService, TOKENS } from '../../core/tokens';

export class PluginConfigError extends Error {}

/** Checks the API version a plugin needs and validates its options (defaults applied); throws naming the entry. */
export function validatePluginOptions(definition: PluginDefinition<unknown>, rawOptions: unknown, where: string): unknown {
  const label = `${where} (${definition.name})`;
  const versionProblem = apiVersionProblem(definition.apiVersion);
  if (versionProblem) throw new PluginConfigError(`${label}: ${versionProblem}`);
  if (!definition.optionsSchema) return rawOptions ?? {};
  const parsed = definition.optionsSchema.safeParse(rawOptions ?? {});
  if (!parsed.success) {
    const problems = parsed.error.issues.map((x) => `${['options', ...x.path.map(String)].join('.')}: ${x.message}`).join('; ');
    throw new PluginConfigError(`${label}: ${problems}`);
  }
  return parsed.data;
}

/**
 * Builds one plugin from its definition and raw YAML options: checks the API version it needs, validates the
 * options with its schema (defaults applied), and calls create() with a child container holding the options.
 * `where` names the YAML entry in messages, e.g. `plugins[2]`. Shared by the loader and the test harness,
 * so a plugin's tests see exactly what start-up does.
 */
export async function instantiatePlugin(
  definition: PluginDefinition<unknown>, rawOptions: unknown, container: DependencyContainer, where: string,
): Promise<GatewayPlugin> {
  const label = `${where} (${definition.name})`;
  const options = validatePluginOptions(definition, rawOptions, where);
  const child = container.createChildContainer();
  registerService(child, TOKENS.PluginOptions, options);
  let plugin: GatewayPlugin;
  try {
    plugin = await definition.create(child, options);
  } catch (err) {
    throw new PluginConfigError(`${label}: create() failed: ${(err as Error)?.message ?? String(err)}`, { cause: err });
  }
  if (!plugin || typeof plugin.name !== 'string') throw new PluginConfigError(`${label}: create() must return a plugin object with a name`);
  return plugin;
}
