/**
 * Where a provider's bill comes from for a run: its admin API, with the admin key from reconcile.providers.<slug>
 * (an ${ENV} reference) or else the environment (OPENAI_ADMIN_KEY, ANTHROPIC_ADMIN_KEY), or a CSV export. The key
 * goes into the returned source for the run alone.
 */
import type { ReconcileConfig } from '../config/reconcile';
import { ANTHROPIC_ADMIN_BASE } from './anthropic-reader';
import { OPENAI_ADMIN_BASE } from './openai-reader';
import { OPENROUTER_API_BASE } from './openrouter-generations';
import type { BillSource } from './run';

const API_READERS = {
  openai: { base: OPENAI_ADMIN_BASE, env: 'OPENAI_ADMIN_KEY' },
  anthropic: { base: ANTHROPIC_ADMIN_BASE, env: 'ANTHROPIC_ADMIN_KEY' },
  // Its generation API takes an ordinary API key: no admin key exists.
  openrouter: { base: OPENROUTER_API_BASE, env: 'OPENROUTER_API_KEY' },
} as const;

export class MissingSourceError extends Error {}

export function apiSource(config: ReconcileConfig, slug: string, env: NodeJS.ProcessEnv = process.env): BillSource {
  const reader = API_READERS[slug as keyof typeof API_READERS];
  if (!reader)
    throw new MissingSourceError(
      `${slug} has no usage and cost API that Tollgate reads (openai, anthropic, openrouter): reconcile it from its console's CSV export (--csv)`,
    );
  const entry = config.providers[slug];
  const adminKey = entry?.admin_key || env[reader.env];
  if (!adminKey)
    throw new MissingSourceError(
      `no admin key for ${slug}: set reconcile.providers.${slug}.admin_key to an \${ENV} reference, or ${reader.env}`,
    );
  return { kind: slug as keyof typeof API_READERS, baseUrl: entry?.base_url ?? reader.base, adminKey };
}
