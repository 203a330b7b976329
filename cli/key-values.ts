import { UserError } from './errors';

/** Repeated `key=value` options (--filter, --tag, --override) as an object; the value may hold "=". */
export function keyValues(list: readonly string[], option: string): Record<string, string> {
  return Object.fromEntries(
    list.map((f) => {
      const i = f.indexOf('=');
      if (i <= 0) throw new UserError(`${option} takes key=value, got "${f}"`);
      return [f.slice(0, i), f.slice(i + 1)];
    }),
  );
}

/** Collects a repeated option's values (commander's argParser). */
export const collect = (value: string, previous: string[]): string[] => [...previous, value];
