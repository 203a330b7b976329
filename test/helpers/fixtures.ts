import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';

/** Project root, whether this file runs from test/ (ts) or dist/test/ (compiled). */
export const PROJECT_ROOT = resolve(__dirname, __dirname.includes(`${'/'}dist${'/'}`) ? '../../..' : '../..');

/** Absolute path of a recorded fixture under test/fixtures. */
export function fixturePath(relative: string): string {
  return resolve(PROJECT_ROOT, 'test/fixtures', relative);
}

/** A recorded fixture's exact bytes. */
export function fixtureBytes(relative: string): Buffer {
  return readFileSync(fixturePath(relative));
}

/** A recorded JSON fixture, parsed. */
export function fixtureJson<T = any>(relative: string): T {
  return JSON.parse(fixtureBytes(relative).toString('utf8')) as T;
}
