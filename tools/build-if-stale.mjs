// `npm start`'s prestart: builds only when a source changed since the last build (dist/build-info.json), so that
// starting an unchanged tree takes no compile. A source is a TypeScript file, a tsconfig or package.json outside
// the folders that hold no sources.
import { execFileSync } from 'node:child_process';
import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';

const root = join(import.meta.dirname, '..');
const NOT_SOURCES = new Set(['node_modules', 'dist', 'data', '.git', '.ci', '.tollgate', 'reports', 'test-results']);
const isSource = (name) => /\.tsx?$/.test(name) || /^tsconfig.*\.json$/.test(name) || name === 'package.json';

/** The newest modification time of a source under `dir`, ms. */
function newestSource(dir) {
  let newest = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    if (entry.isDirectory()) {
      if (!NOT_SOURCES.has(entry.name)) newest = Math.max(newest, newestSource(join(dir, entry.name)));
    } else if (isSource(entry.name)) {
      newest = Math.max(newest, statSync(join(dir, entry.name)).mtimeMs);
    }
  }
  return newest;
}

let built = 0;
try {
  built = statSync(join(root, 'dist', 'build-info.json')).mtimeMs;
} catch {
  // never built
}
if (newestSource(root) > built) execFileSync('npm', ['run', 'build'], { cwd: root, stdio: 'inherit' });
