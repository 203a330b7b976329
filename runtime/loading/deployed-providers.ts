import type { GatewayConfig } from '../../config/schema';
import { authFromConfig, openaiCompatible } from './openai-compatible';
import { BUILTIN_PROVIDERS, USAGE_PARSERS } from '../../providers/registry';
import { tiktokenTokenizer } from '../../providers/tokenizer';
import type { ProviderInstance, ProviderModule } from '../../core/provider-contract';
import { ProviderRegistry } from '../../core/provider-routing';

/**
 * Builds the deployed providers: every built-in module (unless disabled), with its YAML overrides applied,
 * plus the providers declared in YAML alone. Conflicting prefixes or owned paths fail the start.
 */
export function loadProviders(
  config: GatewayConfig,
  extra: Readonly<Record<string, ProviderModule>> = {},
): ProviderRegistry {
  const modules: Record<string, ProviderModule> = { ...BUILTIN_PROVIDERS, ...extra };
  const instances: ProviderInstance[] = [];
  const defaults = {
    connectMs: config.upstream.connect_ms,
    firstByteMs: config.upstream.first_byte_ms,
    idleMs: config.upstream.idle_ms,
  };

  const slugs = new Set([...Object.keys(modules), ...Object.keys(config.providers)]);
  for (const slug of slugs) {
    const entry = config.providers[slug];
    if (entry && !entry.enabled) continue;
    const base = modules[slug] ?? (entry ? openaiCompatible(slug, entry) : undefined);
    if (!base) continue;
    instances.push({
      ...base,
      slug, // the YAML key: a module loaded with `use:` may be deployed under any slug
      displayName: entry?.display_name ?? base.displayName,
      baseUrl: (entry?.base_url ?? base.baseUrl).replace(/\/+$/, ''),
      modelPrefixes: entry?.prefixes ?? base.modelPrefixes,
      auth: entry?.auth ? authFromConfig(entry.auth) : base.auth,
      endpoints: entry?.endpoints ?? base.endpoints,
      outputLimitFields: entry?.output_limit_field
        ? { ...base.outputLimitFields, 'chat.completions': entry.output_limit_field }
        : base.outputLimitFields,
      usage: entry?.usage ? USAGE_PARSERS[entry.usage] : base.usage,
      tokenizer: base.tokenizer ?? tiktokenTokenizer,
      timeouts: {
        connectMs: entry?.timeouts?.connect_ms ?? defaults.connectMs,
        firstByteMs: entry?.timeouts?.first_byte_ms ?? defaults.firstByteMs,
        idleMs: entry?.timeouts?.idle_ms ?? defaults.idleMs,
      },
    });
  }
  return new ProviderRegistry(instances);
}
