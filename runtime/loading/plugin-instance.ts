import { instanceCachingFactory, type DependencyContainer } from 'tsyringe';
import { apiVersionProblem } from '../../contracts/api-version';
import { copyThatMade, THIS_COPY } from '../../contracts/package-copy';
import type { GatewayPlugin } from '../../core/plugin-contract';
import type { Injected, Injection, PluginDefinition } from '../../contracts/plugin-definition';
import { registerService, resolveService, TOKENS, type Token } from '../../contracts/tokens';

export class PluginConfigError extends Error {}

/** A pipeline entry ready to be built: its definition, its validated options, and where the YAML lists it. */
export interface PlannedPlugin {
  where: string;
  definition: PluginDefinition<unknown>;
  options: unknown;
}

/** The plugin, in its own child container (internal: plugins resolve shared services, never each other). */
const PLUGIN = Symbol('tollgate.plugin') as Token<GatewayPlugin | Promise<GatewayPlugin>>;

const labelOf = ({ where, definition }: Pick<PlannedPlugin, 'where' | 'definition'>) => `${where} (${definition.name})`;

/**
 * Checks that this Tollgate can run the plugin (the API version it needs, the copy of Tollgate that made it) and
 * validates its options with its schema (defaults applied); throws naming the entry.
 */
export function validatePluginOptions(
  definition: PluginDefinition<unknown>,
  rawOptions: unknown,
  where: string,
): unknown {
  const label = labelOf({ where, definition });
  const versionProblem = apiVersionProblem(definition.apiVersion);
  if (versionProblem) throw new PluginConfigError(`${label}: ${versionProblem}`);
  const copy = copyThatMade(definition);
  if (copy !== undefined && copy !== THIS_COPY) throw new PluginConfigError(`${label}: ${secondCopyProblem(copy)}`);
  if (!definition.optionsSchema) return rawOptions ?? {};
  const parsed = definition.optionsSchema.safeParse(rawOptions ?? {});
  if (!parsed.success) {
    const problems = parsed.error.issues
      .map((x) => `${['options', ...x.path.map(String)].join('.')}: ${x.message}`)
      .join('; ');
    throw new PluginConfigError(`${label}: ${problems}`);
  }
  return parsed.data;
}

/** Why a plugin made with another copy of Tollgate than the gateway's is refused, naming both. */
export function secondCopyProblem(copy: string): string {
  return (
    `it uses its own copy of Tollgate (${copy}), not the gateway's (${THIS_COPY}): a GatewayError it throws would ` +
    'not be recognised, and every refusal would become 500 plugin_error. Make tollgate a peerDependency of the plugin ' +
    'and remove the copy it installed.'
  );
}

/**
 * Registers a plugin with the container: a child container of `container` holds its validated options under
 * TOKENS.PluginOptions and the plugin itself under its own token, whose factory calls definition.create(child,
 * options) on first resolve. Returns the child container.
 */
export function registerPlugin(
  { definition, options }: PlannedPlugin,
  container: DependencyContainer,
): DependencyContainer {
  const scope = container.createChildContainer();
  registerService(scope, TOKENS.PluginOptions, options);
  scope.register(PLUGIN, {
    useFactory: instanceCachingFactory((c) =>
      definition.create(c, resolveService(c, TOKENS.PluginOptions), injectedServices(c, definition)),
    ),
  });
  return scope;
}

/** The services a definition injects, resolved from its container under the names it chose. */
function injectedServices(container: DependencyContainer, definition: PluginDefinition<unknown>): Injected<Injection> {
  const entries = Object.entries(definition.inject ?? {}).map(([name, service]) => [
    name,
    container.resolve<unknown>(TOKENS[service]),
  ]);
  return Object.fromEntries(entries) as Injected<Injection>;
}

/** Resolves the plugin registered in `scope` (registerPlugin); a failing create() is named after the entry. */
export async function resolvePlugin(scope: DependencyContainer, planned: PlannedPlugin): Promise<GatewayPlugin> {
  const label = labelOf(planned);
  let plugin: GatewayPlugin;
  try {
    plugin = await resolveService(scope, PLUGIN);
  } catch (err) {
    throw new PluginConfigError(`${label}: create() failed: ${(err as Error)?.message ?? String(err)}`, { cause: err });
  }
  if (!plugin || typeof plugin.name !== 'string')
    throw new PluginConfigError(`${label}: create() must return a plugin object with a name`);
  return plugin;
}

/**
 * Builds one plugin from its definition and raw YAML options, as start-up does: checked and validated
 * (validatePluginOptions), registered with the container and resolved from it. `where` names the YAML entry in
 * messages, e.g. `plugins[2]`. Used by the test harness, so a plugin's tests see exactly what start-up does.
 */
export async function instantiatePlugin(
  definition: PluginDefinition<unknown>,
  rawOptions: unknown,
  container: DependencyContainer,
  where: string,
): Promise<GatewayPlugin> {
  const planned = { where, definition, options: validatePluginOptions(definition, rawOptions, where) };
  return resolvePlugin(registerPlugin(planned, container), planned);
}
