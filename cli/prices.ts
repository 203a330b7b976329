import type { Command } from 'commander';
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import type { LoadedConfig } from '../config/load';
import { PRICE_FIELDS } from '../pricing/entry-prices';
import { diffCatalogs, keptOverrides, type CatalogDiff } from '../pricing/catalog-diff';
import {
  importLiteLlmBytes,
  LITELLM_PRICES_URL,
  readImportedCatalog,
  writeImportedCatalog,
  type ImportedCatalog,
} from '../pricing/imported-catalog';
import type { ModelPrice } from '../pricing/model-price';
import { deployProviders, importedCatalogFile, pricesInForce } from '../runtime/wiring';
import { errorLine, UserError } from './errors';
import { count } from './format';

/** A price file larger than this is refused (LiteLLM's is a few MB). */
const MAX_SOURCE_BYTES = 64 * 1024 * 1024;
/** How long a download may take in all. */
const FETCH_TIMEOUT_MS = 60_000;
/** Models listed per kind of change; --json lists them all. */
const LISTED = 25;

/** The bytes of a price file: an http(s) URL is downloaded, anything else is a file path (relative to the cwd). */
async function readSource(from: string): Promise<Buffer> {
  if (!/^https?:\/\//i.test(from)) {
    try {
      return readFileSync(resolve(from));
    } catch (err) {
      throw new UserError(`cannot read ${from}: ${errorLine(err)}`, { cause: err });
    }
  }
  let res: Response;
  try {
    res = await fetch(from, { signal: AbortSignal.timeout(FETCH_TIMEOUT_MS) });
  } catch (err) {
    // fetch says "fetch failed"; its cause says why (ECONNREFUSED, ENOTFOUND, a timeout ...).
    throw new UserError(`cannot download ${from}: ${errorLine((err as Error).cause ?? err)}`, { cause: err });
  }
  if (!res.ok) {
    await res.body?.cancel();
    throw new UserError(`cannot download ${from}: HTTP ${res.status} ${res.statusText}`.trimEnd());
  }
  const chunks: Buffer[] = [];
  let size = 0;
  try {
    for await (const chunk of res.body ?? []) {
      size += chunk.byteLength;
      if (size > MAX_SOURCE_BYTES) {
        await res.body?.cancel();
        throw new UserError(`${from} is larger than ${MAX_SOURCE_BYTES / 1024 / 1024} MB: not a price file`);
      }
      chunks.push(Buffer.from(chunk));
    }
  } catch (err) {
    if (err instanceof UserError) throw err;
    throw new UserError(`cannot download ${from}: ${errorLine((err as Error).cause ?? err)}`, { cause: err });
  }
  return Buffer.concat(chunks);
}

/** The imported catalog written before, or none; a damaged one is replaced by the update (with a warning). */
function previousImport(path: string): ImportedCatalog | undefined {
  try {
    return readImportedCatalog(path);
  } catch (err) {
    process.stderr.write(`tollgate: warning: ${errorLine(err)}; it will be replaced\n`);
    return undefined;
  }
}

function listed(sign: string, ids: string[]): string[] {
  const lines = ids.slice(0, LISTED).map((id) => `  ${sign} ${id}`);
  if (ids.length > LISTED) lines.push(`  ... and ${count(ids.length - LISTED)} more (--json lists them all)`);
  return lines;
}

function summary(diff: CatalogDiff): string[] {
  return [
    `prices in force: ${count(diff.added.length)} models added, ${count(diff.changed.length)} changed, ${count(diff.removed.length)} removed`,
    ...listed('+', diff.added),
    ...listed(
      '~',
      diff.changed.map((c) => `${c.id}: ${c.fields.join(', ')}`),
    ),
    ...listed('-', diff.removed),
  ];
}

/** What an import read, took and left out: every skipped entry or field with its reason. */
function importedLines(source: string, result: ReturnType<typeof importLiteLlmBytes>): string[] {
  const { catalog } = result;
  return [
    `read ${source}: ${count(result.entries)} entries; imported ${count(catalog.models.length)} models of the gateway's providers, ` +
      `skipped ${count(catalog.skipped.length)} entries or fields without a price the gateway can apply and ${count(result.otherProviders)} of other providers`,
    ...listed(
      '!',
      catalog.skipped.map((s) => `${s.provider}/${s.model}${s.field === '*' ? '' : ` ${s.field}`}: ${s.reason}`),
    ),
  ];
}

/** The rates of a price, as "input 2.5, output 10, cache_read 1.25" (USD per 1M tokens; fees per request). */
function rates(p: ModelPrice): string {
  return PRICE_FIELDS.filter((f) => p[f] !== undefined)
    .map((f) => `${f} ${typeof p[f] === 'string' ? p[f] : JSON.stringify(p[f])}`)
    .join(', ');
}

/** The local prices an update kept, and the bundled rates the source has none for. */
function keptLines(overrides: string[], bundled: { id: string; fields: string[] }[]): string[] {
  const lines: string[] = [];
  if (overrides.length > 0) {
    lines.push(
      `local prices kept: ${count(overrides.length)} imported ${overrides.length === 1 ? 'model stays' : 'models stay'} priced by pricing.models, pricing.litellm_file or a provider module`,
      ...listed('=', overrides),
    );
  }
  if (bundled.length > 0) {
    lines.push(
      `bundled rates kept: ${count(bundled.length)} imported ${bundled.length === 1 ? 'model keeps' : 'models keep'} bundled rates the source has none for`,
      ...listed(
        '=',
        bundled.map((k) => `${k.id}: ${k.fields.join(', ')}`),
      ),
    );
  }
  return lines;
}

/** What `prices lookup` prints: the price id, where it comes from, its rates and the price version. */
function lookupOutput(p: ModelPrice, version: string, json: boolean): string {
  if (json) {
    const out = {
      price_id: `${p.provider}/${p.model}`,
      origin: p.origin,
      matched_as: p.match?.via ?? null,
      rates: Object.fromEntries(PRICE_FIELDS.filter((f) => p[f] !== undefined).map((f) => [f, p[f]])),
      price_version: version,
    };
    return `${JSON.stringify(out, null, 2)}\n`;
  }
  const via = p.match ? `, matched as ${p.match.via.replace(/_/g, ' ')}` : '';
  return (
    `price id ${p.provider}/${p.model} (${p.origin}${via})\n${rates(p) || 'no token rates'} (USD per 1M tokens; fees per request or query)\n` +
    `price version ${version}\n`
  );
}

/** `tollgate prices update` (LiteLLM's price file into the deployment's catalog) and `tollgate prices lookup`. */
export function registerPriceCommands(program: Command, load: () => LoadedConfig): void {
  const prices = program.command('prices').description("the deployment's price catalog");
  prices
    .command('lookup <provider> <model>')
    .description('show the price a model is billed at and the catalog entry (price id) its records name')
    .option('--json', 'print the price as JSON: price_id, origin, matched_as, rates (USD per 1M tokens), price_version')
    .action(async (provider: string, model: string, opts: { json?: boolean }) => {
      const { prices: catalog } = await deployProviders(load());
      const p = catalog.lookup(provider, model);
      if (!p) throw new UserError(`${provider}/${model} has no price: its requests are recorded as unpriced`);
      process.stdout.write(lookupOutput(p, catalog.version, Boolean(opts.json)));
    });
  prices
    .command('update')
    .description(
      "import LiteLLM's model_prices_and_context_window.json into the deployment's catalog (pricing.catalog_file); " +
        'local overrides keep winning',
    )
    .option('--from <file|url>', `a file path or an http(s) URL (default: ${LITELLM_PRICES_URL})`)
    .option('--dry-run', 'print what would change and write nothing')
    .option('--json', 'print the summary as JSON (every model listed)')
    .action(async (opts: { from?: string; dryRun?: boolean; json?: boolean }) => {
      const loaded = load();
      const source = opts.from ?? LITELLM_PRICES_URL;
      const bytes = await readSource(source);
      let result;
      try {
        result = importLiteLlmBytes(bytes, source);
      } catch (err) {
        throw new UserError(`${errorLine(err)}; nothing written`, { cause: err });
      }
      const path = importedCatalogFile(loaded);
      const before = await deployProviders(loaded, {}, previousImport(path) ?? null);
      const after = pricesInForce(loaded, before.providers, result.catalog);
      const diff = diffCatalogs(before.prices, after);
      const kept = keptOverrides(
        after,
        result.catalog.models.map((m) => `${m.provider}/${m.model}`),
      );
      const keptBundled = after.keptBundledRates();
      if (!opts.dryRun) writeImportedCatalog(path, result.catalog);

      if (opts.json) {
        const out = {
          source,
          file: path,
          written: !opts.dryRun,
          imported_version: result.catalog.version,
          price_version: after.version,
          entries: result.entries,
          imported: result.catalog.models.length,
          skipped: result.catalog.skipped,
          other_providers: result.otherProviders,
          ...diff,
          kept_overrides: kept,
          kept_bundled: keptBundled,
        };
        process.stdout.write(`${JSON.stringify(out, null, 2)}\n`);
        return;
      }
      for (const z of diff.zeroed)
        process.stderr.write(
          `tollgate: warning: ${z.id}: ${z.fields.join(', ')}: a rate that was set becomes $0; check the source before relying on it\n`,
        );
      const lines = [...importedLines(source, result), ...summary(diff)];
      lines.push(...keptLines(kept, keptBundled));
      lines.push(
        opts.dryRun
          ? `dry run: nothing written (${path})`
          : `wrote ${path} (${result.catalog.version}); prices in force: version ${after.version}. ` +
              'The gateway reads this file when it starts: restart it to use these prices.',
      );
      process.stdout.write(`${lines.join('\n')}\n`);
    });
}
