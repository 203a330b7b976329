// The build stamp: dist/build-info.json, written at the end of `npm run build`. GET /api/info reports it, and
// `npm start` (tools/build-if-stale.mjs) compares the sources with its time to skip a build that changes nothing.
import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

const root = join(import.meta.dirname, '..');
const { version } = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));

/** The commit built, when the tree is a git checkout (a container's build context has no .git: null). */
function commit() {
  try {
    return execFileSync('git', ['rev-parse', 'HEAD'], { cwd: root, stdio: ['ignore', 'pipe', 'ignore'] })
      .toString()
      .trim();
  } catch {
    return null;
  }
}

const info = { version, commit: commit(), built_at: new Date().toISOString() };
writeFileSync(join(root, 'dist', 'build-info.json'), `${JSON.stringify(info)}\n`);
