import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';

/**
 * Which copy of Tollgate is loaded: its package folder. Each copy adds its folder to a process-wide set when its
 * core loads, and marks the plugin definitions its definePlugin makes. A plugin that installs Tollgate as a
 * dependency of its own (instead of a peer dependency) brings a second copy: the GatewayError it throws is another
 * class, which the gateway would take for a crash (500 plugin_error). The loader refuses such a plugin at start-up.
 */
export const THIS_COPY = packageFolder(__dirname);

const LOADED = Symbol.for('tollgate.loadedCopies');
const MADE_BY = Symbol.for('tollgate.madeByCopy');

const registry = globalThis as { [LOADED]?: Set<string> };
(registry[LOADED] ??= new Set()).add(THIS_COPY);

/** The package folders of every copy of Tollgate loaded in this process so far. */
export function loadedCopies(): ReadonlySet<string> {
  return registry[LOADED]!;
}

/** Marks a value as made by this copy (definePlugin does, on the definition). */
export function markCopy<T extends object>(value: T): T {
  if (Object.isExtensible(value)) Object.defineProperty(value, MADE_BY, { value: THIS_COPY, configurable: true });
  return value;
}

/** The package folder of the copy that made `value`, if one marked it. */
export function copyThatMade(value: object): string | undefined {
  const made = (value as { [MADE_BY]?: unknown })[MADE_BY];
  return typeof made === 'string' ? made : undefined;
}

/** The nearest folder at or above `dir` with a package.json. */
function packageFolder(dir: string): string {
  for (let d = dir; ; d = dirname(d)) {
    if (existsSync(join(d, 'package.json'))) return d;
    if (dirname(d) === d) return dir;
  }
}
