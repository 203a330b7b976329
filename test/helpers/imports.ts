import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { PROJECT_ROOT } from './fixtures';

/** Every TypeScript source under a folder. */
export function sourcesUnder(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const path = join(dir, e.name);
    if (e.isDirectory()) return sourcesUnder(path);
    return e.name.endsWith('.ts') ? [path] : [];
  });
}

/** Every module specifier of a source text: static imports and exports (type-only ones too), import() and require(). */
export function specifiersOf(source: string): string[] {
  const found: string[] = [];
  const pattern = /(?:\bfrom\s*|\bimport\s*\(\s*|\brequire\s*\(\s*|^\s*import\s+)(['"])([^'"]+)\1/gm;
  for (let m = pattern.exec(source); m; m = pattern.exec(source)) found.push(m[2]);
  return found;
}

/** A file's relative imports, each as the project path it names (e.g. "core/errors"), with the specifier as written. */
export function relativeImportsOf(file: string): { spec: string; target: string }[] {
  return specifiersOf(readFileSync(file, 'utf8'))
    .filter((spec) => spec.startsWith('.'))
    .map((spec) => ({
      spec,
      target: relative(PROJECT_ROOT, resolve(dirname(file), spec))
        .split(/[\\/]/)
        .join('/'),
    }));
}
