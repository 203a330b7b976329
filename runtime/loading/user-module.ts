import { createRequire } from 'node:module';
import { isAbsolute, join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';

/** A module named in YAML could not be loaded; the message says which and why. */
export class ModuleLoadError extends Error {}

/** True for `./x`, `../x` and absolute paths; anything else is an npm package name. */
export function isPathSpecifier(use: string): boolean {
  return use.startsWith('.') || isAbsolute(use);
}

/**
 * Loads a module named by a YAML `use:`: a path relative to the config file's folder (a file, a file without
 * its .js extension, or a folder with an index.js / package.json main), or an npm package name, looked up
 * from the config file's folder first and then from Tollgate's own install. Loaded with import(), so both
 * CommonJS and ES modules work.
 */
export async function importUserModule(use: string, configDir: string): Promise<Record<string, unknown>> {
  const configFile = join(configDir, 'gateway.config.yaml');
  let target: string;
  try {
    target = pathToFileURL(
      createRequire(configFile).resolve(isPathSpecifier(use) ? resolve(configDir, use) : use),
    ).href;
  } catch (err) {
    if (isPathSpecifier(use))
      throw new ModuleLoadError(`cannot load "${use}": ${firstLine(err)} (paths are relative to ${configDir})`);
    target = await resolveEsmPackage(use, configFile);
  }
  try {
    return (await import(target)) as Record<string, unknown>;
  } catch (err) {
    throw new ModuleLoadError(`cannot load "${use}": ${firstLine(err)}`);
  }
}

/**
 * An ESM-only package (its exports have an `import` entry but no `require` one) is resolved as import()
 * would resolve it from the config file's folder, falling back to Tollgate's own install.
 */
async function resolveEsmPackage(use: string, configFile: string): Promise<string> {
  const { resolve: resolveAsImport } = await import('import-meta-resolve');
  for (const parent of [pathToFileURL(configFile).href, pathToFileURL(__filename).href]) {
    try {
      return resolveAsImport(use, parent);
    } catch {
      // not installed there: try the next place
    }
  }
  throw new ModuleLoadError(`cannot load "${use}": package not found from ${configFile} or from Tollgate's install`);
}

/**
 * The export a module offers for a contract: `export default`, a named export (e.g. `plugin`, `provider`),
 * or CommonJS `module.exports` itself. import() of a CommonJS file wraps module.exports in `default`, so a
 * compiled TypeScript `export default` arrives as default.default; both shapes are accepted.
 */
export function pickExport<T>(
  mod: Record<string, unknown>,
  name: string,
  accept: (value: unknown) => value is T,
): T | undefined {
  const cjs = isRecord(mod.default) ? mod.default : {};
  const candidates = [cjs.default, mod.default, mod[name], cjs[name], mod];
  return candidates.find(accept);
}

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null;

function firstLine(err: unknown): string {
  return String((err as Error)?.message ?? err).split('\n')[0];
}
