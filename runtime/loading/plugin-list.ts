import type { DependencyContainer } from 'tsyringe';
import type { GatewayConfig, PluginEntry } from '../../config/schema';
import { BUILTIN_PLUGINS, REQUIRED_PLUGINS } from '../../plugins';
import { importUserModule, ModuleLoadError, pickExport } from './user-module';
import type { GatewayPlugin, PluginDefinition } from '../../core/plugin-contract';
import { checkPipeline, checkServices, type ResolvedPlugin } from './plugin-dependencies';
import { instantiatePlugin, PluginConfigError, validatePluginOptions } from './plugin-instance';

export { PluginConfigError };

/** A YAML `plugins:` entry with its definition and where it stands in the YAML (for messages). */
export interface PipelineEntry extends ResolvedPlugin {
  entry: PluginEntry;
}

/**
 * The pipeline the YAML `plugins:` list describes, in that order (the required plugins, auth and header-strip,
 * first when the list does not name them): every plugin module loaded, and what the plugins declare about each
 * other checked (plugin-dependencies.ts). Nothing is created yet.
 */
export async function planPipeline(config: GatewayConfig, configDir: string): Promise<PipelineEntry[]> {
  const planned = await resolvePipeline(config.plugins, configDir);
  checkPipeline(planned, config, Object.values(BUILTIN_PLUGINS));
  return planned;
}

/**
 * Creates the planned plugins, in order. Each gets its own child container holding its validated options, and
 * resolves shared services from the root.
 */
export async function loadPlugins(planned: readonly PipelineEntry[], container: DependencyContainer): Promise<GatewayPlugin[]> {
  checkServices(planned, container);
  const plugins: GatewayPlugin[] = [];
  for (const { entry, where, definition } of planned) plugins.push(await instantiatePlugin(definition, entry.options, container, where));
  return plugins;
}

/** What `tollgate check-config` checks without starting anything: the pipeline fits together and every option is valid. */
export async function checkPlugins(config: GatewayConfig, configDir: string): Promise<void> {
  for (const { entry, where, definition } of await planPipeline(config, configDir)) validatePluginOptions(definition, entry.options, where);
}

/** The enabled entries in pipeline order (required built-ins first when not listed), with their definitions. */
async function resolvePipeline(entries: readonly PluginEntry[], configDir: string): Promise<PipelineEntry[]> {
  const listed = entries.filter((e) => e.enabled);
  const missing = REQUIRED_PLUGINS.filter((name) => !listed.some((e) => e.use === name));
  const ordered: PluginEntry[] = [...missing.map((use) => ({ use, enabled: true })), ...listed];
  for (const name of REQUIRED_PLUGINS) {
    if (entries.some((e) => e.use === name && !e.enabled)) throw new PluginConfigError(`plugins: "${name}" cannot be disabled`);
  }
  const resolved = [];
  for (const entry of ordered) {
    // Messages name the entry by its index in the YAML list (an implicit built-in has none).
    const index = entries.indexOf(entry);
    const where = index >= 0 ? `plugins[${index}]` : `plugins (implicit ${entry.use})`;
    resolved.push({ entry, where, definition: await resolveDefinition(entry.use, configDir, where) });
  }
  return resolved;
}

/** A built-in name, a path relative to the config file, or an npm package name. */
async function resolveDefinition(use: string, configDir: string, where: string): Promise<PluginDefinition<unknown>> {
  const builtin = BUILTIN_PLUGINS[use];
  if (builtin) return builtin;
  let mod: Record<string, unknown>;
  try {
    mod = await importUserModule(use, configDir);
  } catch (err) {
    if (err instanceof ModuleLoadError) throw new PluginConfigError(`${where}: ${err.message}`);
    throw err;
  }
  const definition = pickExport(mod, 'plugin', isPluginDefinition);
  if (!definition) throw new PluginConfigError(`${where}: "${use}" does not export a plugin definition (export default definePlugin({ name, create }))`);
  return definition;
}

function isPluginDefinition(v: unknown): v is PluginDefinition<unknown> {
  const d = v as Partial<PluginDefinition<unknown>> | undefined;
  return typeof d?.create === 'function' && typeof d.name === 'string';
}
