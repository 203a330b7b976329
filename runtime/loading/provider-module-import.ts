import { z } from 'zod';
import type { GatewayConfig, ProviderEntry } from '../../config/schema';
import { apiVersionProblem } from '../../contracts/api-version';
import { ENDPOINT_KEYS, PROVIDER_FAMILIES } from '../../providers/registry';
import { importUserModule, ModuleLoadError, pickExport } from './user-module';
import type { ProviderModule } from '../../core/provider-contract';

export class ProviderConfigError extends Error {}

const fn = z.custom<(...args: never[]) => unknown>((v) => typeof v === 'function', 'expected a function');
const endpointKey = z.enum(ENDPOINT_KEYS);
const headerName = z
  .string()
  .regex(/^[a-z0-9-]+$/, 'expected a lower-case header name (apiKeyHeader() lower-cases it)');

/** The shape a module written in code must have (types are erased at run time, so it is checked here). */
const providerModuleSchema = z.object({
  apiVersion: z.string().optional(),
  slug: z.string().min(1),
  displayName: z.string().min(1),
  family: z.enum(PROVIDER_FAMILIES),
  baseUrl: z.string().optional(),
  modelPrefixes: z.array(z.string().min(1)),
  auth: z.object({ headers: z.array(headerName) }),
  endpoints: z.array(endpointKey).min(1),
  ownsEndpoints: z.array(endpointKey).optional(),
  paths: z.record(endpointKey, z.string().startsWith('/')).optional(),
  outputLimitFields: z.partialRecord(endpointKey, z.string().min(1)).optional(),
  usage: z.object({ fromJson: fn, createStreamAccumulator: fn }),
});

/**
 * Loads the provider modules named by `providers.<slug>.use` (a path relative to the config file, or an npm
 * package). Each must export a ProviderModule (defineProvider); the YAML key becomes its slug, so one module
 * can be deployed twice (acme-us, acme-eu). Any problem stops start-up with a message naming the provider.
 */
export async function loadProviderModules(
  entries: GatewayConfig['providers'],
  configDir: string,
): Promise<Record<string, ProviderModule>> {
  const modules: Record<string, ProviderModule> = {};
  for (const [slug, entry] of Object.entries(entries)) {
    if (!entry.use || !entry.enabled) continue;
    modules[slug] = { ...(await loadOne(slug, entry, configDir)), slug };
  }
  return modules;
}

async function loadOne(slug: string, entry: ProviderEntry, configDir: string): Promise<ProviderModule> {
  const where = `providers.${slug}`;
  const use = entry.use!;
  let mod: Record<string, unknown>;
  try {
    mod = await importUserModule(use, configDir);
  } catch (err) {
    if (err instanceof ModuleLoadError) throw new ProviderConfigError(`${where}: ${err.message}`);
    throw err;
  }
  const candidate = pickExport(mod, 'provider', looksLikeProvider);
  if (!candidate)
    throw new ProviderConfigError(
      `${where}: "${use}" does not export a provider module (export default defineProvider({ ... }))`,
    );

  const versionProblem = apiVersionProblem(candidate.apiVersion);
  if (versionProblem) throw new ProviderConfigError(`${where}: "${use}": ${versionProblem}`);
  const parsed = providerModuleSchema.safeParse(candidate);
  if (!parsed.success) {
    const problems = parsed.error.issues
      .map((i) => `${i.path.map(String).join('.') || '(module)'}: ${i.message}`)
      .join('; ');
    throw new ProviderConfigError(`${where}: "${use}" is not a valid provider module: ${problems}`);
  }
  if (!candidate.baseUrl && !entry.base_url)
    throw new ProviderConfigError(`${where}: "${use}" declares no baseUrl; set ${where}.base_url`);
  return candidate as ProviderModule;
}

function looksLikeProvider(v: unknown): v is Partial<ProviderModule> & Record<string, unknown> {
  return typeof v === 'object' && v !== null && ('usage' in v || 'modelPrefixes' in v);
}
