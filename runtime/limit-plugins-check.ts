import type { GatewayConfig } from '../config/schema';

/** Which plugin enforces each limit setting: a limit whose plugin is not in the pipeline would silently do nothing. */
const ENFORCED_BY: [string, (l: GatewayConfig['workspaces'][number]['limits']) => boolean][] = [
  ['max-tokens', (l) => l.max_tokens !== undefined],
  ['rate-limit', (l) => !!(l.requests_per_minute || l.requests_per_second || l.tokens_per_minute || Object.values(l.per_tag ?? {}).some((t) => t.requests_per_minute || t.requests_per_second || t.tokens_per_minute))],
  ['concurrency', (l) => !!(l.concurrent_streams || Object.values(l.per_tag ?? {}).some((t) => t.concurrent_streams))],
  ['budget', (l) => l.budgets.length > 0],
  ['required-tags', (l) => l.required_tags.length > 0],
];

/** Refuses to start when a workspace sets a limit that no plugin in the pipeline enforces. */
export function missingLimitPlugins(config: GatewayConfig): string[] {
  const enabled = new Set(config.plugins.filter((p) => p.enabled).map((p) => p.use));
  const problems: string[] = [];
  for (const w of config.workspaces) {
    for (const [plugin, uses] of ENFORCED_BY) {
      if (uses(w.limits) && !enabled.has(plugin)) problems.push(`workspaces.${w.id}.limits needs the "${plugin}" plugin in plugins:`);
    }
  }
  return problems;
}
