/**
 * The deployment's imported catalog: a LiteLLM model_prices_and_context_window.json converted by
 * `tollgate prices update` and written to pricing.catalog_file (default ./data/prices.json beside the config).
 * Start-up reads it when the file exists. Its entries replace the bundled ones of the same id and add the others;
 * the provider modules' prices, pricing.litellm_file and pricing.models still win over it (catalog.ts).
 */
import { createHash } from 'node:crypto';
import { mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { z } from 'zod';
import { importLiteLlm, isGatewayProvider } from './litellm';
import { catalogModelSchema, skippedEntrySchema, type CatalogModel } from './model-price';

/** Where `prices update` writes and start-up reads, relative to the config file's folder. */
export const DEFAULT_CATALOG_FILE = './data/prices.json';

/** LiteLLM's published price file, the default source of `prices update`. */
export const LITELLM_PRICES_URL =
  'https://raw.githubusercontent.com/BerriAI/litellm/main/model_prices_and_context_window.json';

export const importedCatalogSchema = z.strictObject({
  /** "imported-<first 12 hex of the SHA-256 of the models>": the same prices give the same version. */
  version: z.string().regex(/^imported-[0-9a-f]{12}$/),
  /** The file or URL the prices were read from, and when. */
  source: z.string().min(1),
  retrieved: z.string().min(1),
  /** SHA-256 of the source bytes as read. */
  source_sha256: z.string().regex(/^[0-9a-f]{64}$/),
  models: z.array(catalogModelSchema),
  /** Entries of the gateway's providers that could not be imported, with the reason. */
  skipped: z.array(skippedEntrySchema),
});
export type ImportedCatalog = z.infer<typeof importedCatalogSchema>;

/** What was read and what was left out, for the summary. */
export interface ImportResult {
  catalog: ImportedCatalog;
  /** Entries in the source file (LiteLLM's sample_spec excluded). */
  entries: number;
  /** Entries of providers the gateway does not serve (bedrock, azure, vertex_ai ...). */
  otherProviders: number;
}

/** An imported catalog that is there but cannot be used: the deployment must fix it (a user error at start). */
export class ImportedCatalogConfigError extends Error {
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = 'ImportedCatalogConfigError';
  }
}

/** The absolute path of the imported catalog of a deployment. */
export function importedCatalogPath(configDir: string, catalogFile: string | undefined): string {
  return resolve(configDir, catalogFile ?? DEFAULT_CATALOG_FILE);
}

/**
 * Converts the bytes of a LiteLLM price file. Throws an Error saying what is wrong when the text is not JSON, not
 * an object keyed by model id, or holds no priced entry of a gateway provider (then it is not such a file).
 */
export function importLiteLlmBytes(bytes: Buffer, source: string, now = new Date()): ImportResult {
  let json: unknown;
  try {
    json = JSON.parse(bytes.toString('utf8'));
  } catch (err) {
    throw new Error(`${source} is not valid JSON: ${(err as Error).message}`, { cause: err });
  }
  let imported;
  try {
    imported = importLiteLlm(json);
  } catch (err) {
    throw new Error(`${source}: ${(err as Error).message}`, { cause: err });
  }
  const keys = Object.keys(json as object).filter((k) => k !== 'sample_spec');
  const ours = imported.skipped.filter((s) => isGatewayProvider(s.provider));
  if (imported.models.length === 0) {
    throw new Error(
      `${source} has no entry with a token or request price for a gateway provider (${keys.length} entries read): ` +
        "expected LiteLLM's model_prices_and_context_window.json",
    );
  }
  const models = sortModels(imported.models);
  return {
    catalog: {
      version: `imported-${sha256(JSON.stringify(models)).slice(0, 12)}`,
      source,
      retrieved: now.toISOString(),
      source_sha256: sha256(bytes),
      models,
      skipped: ours,
    },
    entries: keys.length,
    otherProviders: imported.skipped.length - ours.length,
  };
}

/**
 * The imported catalog at `path`, or undefined when there is none. A file that is there but unreadable or not
 * a catalog `prices update` wrote is an error naming the file: prices are never silently dropped.
 */
export function readImportedCatalog(path: string): ImportedCatalog | undefined {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw new ImportedCatalogConfigError(`imported price catalog ${path}: ${(err as Error).message}`, { cause: err });
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (err) {
    throw new ImportedCatalogConfigError(
      `imported price catalog ${path} is not valid JSON (${(err as Error).message}): run \`tollgate prices update\` again`,
      { cause: err },
    );
  }
  const parsed = importedCatalogSchema.safeParse(json);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new ImportedCatalogConfigError(
      `imported price catalog ${path} is not one \`tollgate prices update\` wrote: ${issue.path.join('.')}: ${issue.message}`,
    );
  }
  return parsed.data;
}

/** Writes the catalog through a temporary file renamed into place, so a reader never sees half a file. */
export function writeImportedCatalog(path: string, catalog: ImportedCatalog): void {
  mkdirSync(dirname(path), { recursive: true });
  const tmp = `${path}.${process.pid}.tmp`;
  writeFileSync(tmp, JSON.stringify(catalog, null, 2) + '\n');
  renameSync(tmp, path);
}

function sortModels(models: CatalogModel[]): CatalogModel[] {
  const id = (m: CatalogModel) => `${m.provider}/${m.model}`;
  return [...models].sort((a, b) => (id(a) < id(b) ? -1 : id(a) > id(b) ? 1 : 0));
}

const sha256 = (data: string | Buffer): string => createHash('sha256').update(data).digest('hex');
