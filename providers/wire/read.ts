import type { Usage } from '../../core/usage';

/** A parsed JSON object. Provider bodies are untrusted: every read below checks the type it gets. */
export type JsonObject = Record<string, unknown>;

export function isObject(v: unknown): v is JsonObject {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** The value at a key path, or undefined as soon as a step is not an object. */
export function at(v: unknown, ...path: string[]): unknown {
  let cur = v;
  for (const key of path) {
    if (!isObject(cur)) return undefined;
    cur = cur[key];
  }
  return cur;
}

/**
 * A count or a cost at a key path: a finite number, never negative. null, strings, NaN and negative numbers
 * (nothing a provider bills is below zero) read as "not reported".
 */
export function num(v: unknown, ...path: string[]): number | undefined {
  const x = at(v, ...path);
  return typeof x === 'number' && Number.isFinite(x) && x >= 0 ? x : undefined;
}

export function str(v: unknown, ...path: string[]): string | undefined {
  const x = at(v, ...path);
  return typeof x === 'string' ? x : undefined;
}

export function obj(v: unknown, ...path: string[]): JsonObject | undefined {
  const x = at(v, ...path);
  return isObject(x) ? x : undefined;
}

export function arr(v: unknown, ...path: string[]): readonly unknown[] | undefined {
  const x = at(v, ...path);
  return Array.isArray(x) ? x : undefined;
}

/** JSON.parse that returns undefined instead of throwing (stream pushes must never throw). */
export function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

/** `a - b - c ...` over reported counts, clamped at 0; undefined when `a` was not reported. */
export function minus(a: number | undefined, ...parts: (number | undefined)[]): number | undefined {
  if (a === undefined) return undefined;
  let rest = a;
  for (const p of parts) rest -= p ?? 0;
  return rest > 0 ? rest : 0;
}

/** A copy without the keys whose value is undefined, so "not reported" is absent rather than present-but-empty. */
export function compact(u: Usage): Usage {
  const out: Usage = {};
  for (const key of Object.keys(u) as (keyof Usage)[]) {
    if (u[key] !== undefined) (out as Record<string, unknown>)[key] = u[key];
  }
  return out;
}

/**
 * A provider-reported cost as a plain decimal string. We only have the parsed number, so this is its
 * shortest round-trip form (what any JSON serializer wrote), with exponent notation expanded because
 * pricing parses it as a decimal (String(1e-7) is "1e-7", we return "0.0000001").
 */
export function decimalString(n: number): string {
  const s = String(n);
  const e = s.indexOf('e');
  if (e === -1) return s;
  const negative = s.charCodeAt(0) === 45; // '-'
  const mantissa = s.slice(negative ? 1 : 0, e);
  const exponent = Number(s.slice(e + 1));
  const dot = mantissa.indexOf('.');
  const digits = dot === -1 ? mantissa : mantissa.slice(0, dot) + mantissa.slice(dot + 1);
  const point = (dot === -1 ? mantissa.length : dot) + exponent;
  let plain: string;
  if (point <= 0) plain = `0.${'0'.repeat(-point)}${digits}`;
  else if (point >= digits.length) plain = digits + '0'.repeat(point - digits.length);
  else plain = `${digits.slice(0, point)}.${digits.slice(point)}`;
  return negative ? `-${plain}` : plain;
}

/** undefined for a usage object without one usable count or cost (so it cannot pass for a measured zero). */
export function reported(u: Usage): Usage | undefined {
  for (const key of Object.keys(u)) if (!DESCRIPTIVE.has(key)) return u;
  return undefined;
}

/** Usage fields that describe a request rather than count or cost it. */
const DESCRIPTIVE: ReadonlySet<string> = new Set([
  'servedModel',
  'generationId',
  'searchContextSize',
  'serviceTier',
  'providerCostStepUsd',
]);

/** The service tier an answer names at `path`, lower-cased; undefined when absent or empty. */
export function serviceTierAt(v: unknown, ...path: string[]): string | undefined {
  const tier = str(v, ...path)
    ?.trim()
    .toLowerCase();
  return tier ? tier : undefined;
}

/** Turns a provider's usage object (and the object holding it, for fields such as `model`) into Usage. */
export type UsageReader = (usage: JsonObject, root: JsonObject) => Usage;

/** Usage from a complete JSON body's top-level `usage`; undefined when the body reports none. */
export function usageOf(body: unknown, read: UsageReader): Usage | undefined {
  const usage = obj(body, 'usage');
  return usage && isObject(body) ? reported(read(usage, body)) : undefined;
}

/** A cost field that may be a number (OpenRouter) or an object with total_cost (Perplexity). */
export function costString(v: unknown): string | undefined {
  const n = typeof v === 'number' ? v : num(v, 'total_cost');
  return n !== undefined && Number.isFinite(n) ? decimalString(n) : undefined;
}
