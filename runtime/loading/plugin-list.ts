import type { DependencyContainer } from 'tsyringe';
import type { GatewayConfig, PluginEntry } from '../../config/schema';
import { loadedCopies, THIS_COPY } from '../../contracts/package-copy';
import type { GatewayPlugin } from '../../core/plugin-contract';
import type { PluginDefinition } from '../../contracts/plugin-definition';
import { PluginPipeline } from '../../core/plugin-pipeline';
import { BUILTIN_PLUGINS, REQUIRED_PLUGINS } from '../../plugins';
import { checkPipeline, checkServices } from './plugin-dependencies';
import {
  PluginConfigError,
  registerPlugin,
  resolvePlugin,
  secondCopyProblem,
  validatePluginOptions,
  type PlannedPlugin,
} from './plugin-instance';
import { importUserModule, ModuleLoadError, pickExport } from './user-module';

export { PluginConfigError, type PlannedPlugin };

/**
 * The pipeline the YAML `plugins:` list describes, in that order (the required plugins, auth and header-strip,
 * first when the list does not name them): every plugin module loaded, each plugin's API version and options
 * checked, and what the plugins declare about each other checked (plugin-dependencies.ts). Nothing is created
 * yet, and nothing is opened: start-up runs this before it touches the store, and check-config runs just this.
 */
export async function planPipeline(config: GatewayConfig, configDir: string): Promise<PlannedPlugin[]> {
  const planned: PlannedPlugin[] = [];
  for (const { entry, where } of pipelineEntries(config.plugins)) {
    const definition = await resolveDefinition(entry.use, configDir, where);
    planned.push({ where, definition, options: validatePluginOptions(definition, entry.options, where) });
  }
  checkPipeline(planned, config, Object.values(BUILTIN_PLUGINS));
  return planned;
}

/**
 * Builds the planned plugins, in order: each is registered with the container (its own child container holding
 * its options) and resolved from it, resolving the shared services from the root.
 */
export async function createPipeline(
  planned: readonly PlannedPlugin[],
  container: DependencyContainer,
  observers: { first: readonly GatewayPlugin[]; last: readonly GatewayPlugin[] } = { first: [], last: [] },
): Promise<PluginPipeline> {
  checkServices(planned, container);
  const scopes = planned.map((p) => registerPlugin(p, container));
  const plugins: GatewayPlugin[] = [];
  for (let i = 0; i < planned.length; i++) plugins.push(await resolvePlugin(scopes[i], planned[i]));
  return new PluginPipeline([...observers.first, ...plugins, ...observers.last]);
}

/** The enabled entries in pipeline order (required built-ins first when not listed), each named for messages. */
function pipelineEntries(entries: readonly PluginEntry[]): { entry: PluginEntry; where: string }[] {
  const listed = entries.filter((e) => e.enabled);
  const missing = REQUIRED_PLUGINS.filter((name) => !listed.some((e) => e.use === name));
  for (const name of REQUIRED_PLUGINS) {
    if (entries.some((e) => e.use === name && !e.enabled))
      throw new PluginConfigError(`plugins: "${name}" cannot be disabled`);
  }
  // Messages name the entry by its index in the YAML list (an implicit built-in has none).
  return [
    ...missing.map((use) => ({ entry: { use, enabled: true }, where: `plugins (implicit ${use})` })),
    ...listed.map((entry) => ({ entry, where: `plugins[${entries.indexOf(entry)}]` })),
  ];
}

/** A built-in name, a path relative to the config file, or an npm package name. */
async function resolveDefinition(use: string, configDir: string, where: string): Promise<PluginDefinition<unknown>> {
  const builtin = BUILTIN_PLUGINS[use];
  if (builtin) return builtin;
  const copiesBefore = new Set(loadedCopies());
  let mod: Record<string, unknown>;
  try {
    mod = await importUserModule(use, configDir);
  } catch (err) {
    if (err instanceof ModuleLoadError) throw new PluginConfigError(`${where}: ${err.message}`);
    throw err;
  }
  // A copy of Tollgate that loading this module brought in (definitions made by a copy loaded earlier are caught
  // by their mark, in validatePluginOptions).
  const brought = [...loadedCopies()].find((copy) => copy !== THIS_COPY && !copiesBefore.has(copy));
  if (brought) throw new PluginConfigError(`${where}: "${use}": ${secondCopyProblem(brought)}`);
  const definition = pickExport(mod, 'plugin', isPluginDefinition);
  if (!definition)
    throw new PluginConfigError(
      `${where}: "${use}" does not export a plugin definition (export default definePlugin({ name, create }))`,
    );
  return definition;
}

function isPluginDefinition(v: unknown): v is PluginDefinition<unknown> {
  const d = v as Partial<PluginDefinition<unknown>> | undefined;
  return typeof d?.create === 'function' && typeof d.name === 'string';
}
