import type { DependencyContainer } from 'tsyringe';
import { LIMIT_MODIFIERS, type WorkspaceLimits } from '../../config/limits';
import type { GatewayConfig } from '../../config/schema';
import { servicesNeeded, type PluginDefinition } from '../../contracts/plugin-definition';
import { TOKENS } from '../../contracts/tokens';
import { PluginConfigError } from './plugin-instance';

/** A pipeline entry once its definition is known. */
export interface ResolvedPlugin {
  where: string;
  definition: PluginDefinition<unknown>;
}

/**
 * Checks what the plugins declare about each other (PluginDefinition.requires, order, enforces) against the
 * pipeline, as Fastify checks plugin metadata at registration: a missing plugin, a wrong order or a limit no
 * listed plugin enforces stops start-up (and check-config) with every problem named.
 */
export function checkPipeline(
  pipeline: readonly ResolvedPlugin[],
  config: GatewayConfig,
  known: readonly PluginDefinition<unknown>[],
): void {
  const position = new Map(pipeline.map((p, i) => [p.definition.name, i]));
  const problems: string[] = [];
  pipeline.forEach(({ where, definition: d }, i) => {
    const label = `${where} (${d.name})`;
    for (const name of d.requires?.plugins ?? []) {
      if (!position.has(name)) problems.push(`${label} needs the "${name}" plugin in plugins:`);
    }
    for (const name of d.order?.after ?? []) {
      if ((position.get(name) ?? -1) > i) problems.push(`${label} must come after "${name}" in plugins:`);
    }
    for (const name of d.order?.before ?? []) {
      if ((position.get(name) ?? Infinity) < i) problems.push(`${label} must come before "${name}" in plugins:`);
    }
  });
  for (const w of config.workspaces) {
    for (const setting of limitSettingsOf(w.limits)) {
      if (pipeline.some((p) => p.definition.enforces?.includes(setting))) continue;
      const enforcer = known.find((d) => d.enforces?.includes(setting));
      problems.push(`workspaces.${w.id}.limits needs the "${enforcer?.name ?? setting}" plugin in plugins:`);
    }
  }
  if (problems.length)
    throw new PluginConfigError(`plugins do not fit together:\n  - ${[...new Set(problems)].join('\n  - ')}`);
}

/** Start-up only: every service a plugin declares is registered in the container it will resolve from. */
export function checkServices(pipeline: readonly ResolvedPlugin[], container: DependencyContainer): void {
  for (const { where, definition: d } of pipeline) {
    for (const name of servicesNeeded(d)) {
      if (!container.isRegistered(TOKENS[name], true))
        throw new PluginConfigError(`${where} (${d.name}) needs the ${name} service, which is not registered`);
    }
  }
}

/** The limit settings a workspace uses (per_tag settings count as their own names). */
function limitSettingsOf(limits: WorkspaceLimits): (keyof WorkspaceLimits)[] {
  const used = new Set<keyof WorkspaceLimits>();
  const scopes: Partial<WorkspaceLimits>[] = [limits, ...Object.values(limits.per_tag ?? {})];
  for (const scope of scopes) {
    for (const [name, value] of Object.entries(scope) as [keyof WorkspaceLimits, unknown][]) {
      if (name === 'per_tag' || LIMIT_MODIFIERS.has(name)) continue; // modifiers need no plugin of their own
      if (Array.isArray(value) ? value.length > 0 : value !== undefined) used.add(name);
    }
  }
  return [...used];
}
