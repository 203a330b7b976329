import { z } from 'zod';

const NUMBER = /^-?\d+(\.\d+)?$/;

/**
 * Numbers and booleans in YAML may come from ${ENV} references, which interpolate to text: this accepts their
 * spelling ("600", "0.8", "true") for a number or boolean schema, and leaves every other value to it.
 */
export function fromText<T extends z.ZodType>(schema: T) {
  return z.preprocess((v) => {
    if (typeof v !== 'string') return v;
    const t = v.trim();
    if (NUMBER.test(t)) return Number(t);
    if (t === 'true' || t === 'false') return t === 'true';
    return v;
  }, schema);
}
