import { readFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { parseDocument } from 'yaml';
import { z } from 'zod';
import { gatewayConfigSchema, type GatewayConfig } from './schema';

export class ConfigError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ConfigError';
  }
}

export interface LoadedConfig {
  config: GatewayConfig;
  /** Absolute path of the file, and its folder (relative plugin paths resolve against it). */
  path: string;
  dir: string;
  /** Things that load but deserve a word at start (e.g. a gateway key written in the file as plain text). */
  warnings?: string[];
}

/** Which file to load: --config, then GATEWAY_CONFIG, then ./gateway.config.yaml. */
export function configPath(flag?: string, env: NodeJS.ProcessEnv = process.env): string {
  return resolve(flag ?? env.GATEWAY_CONFIG ?? 'gateway.config.yaml');
}

export function loadConfigFile(path: string, env: NodeJS.ProcessEnv = process.env): LoadedConfig {
  const text = readConfigText(path);
  return { config: parseConfig(text, env, path), path, dir: dirname(path), warnings: plainTextKeys(text) };
}

/**
 * The file's `storage` section alone, every other section at its defaults: for commands that read the store and
 * nothing else (`tollgate usage`). A ${VAR} elsewhere in the file (a provider's key) need not be set for a report,
 * and a mistake elsewhere is for check-config and start to name.
 */
export function loadStorageSettings(path: string, env: NodeJS.ProcessEnv = process.env): LoadedConfig {
  const raw = parseYaml(readConfigText(path), path);
  if (!isPlainObject(raw)) return { config: validate(raw, path), path, dir: dirname(path) };
  const only = raw.storage === undefined ? {} : { storage: interpolate(raw.storage, env, ['storage']) };
  return { config: validate(only, path), path, dir: dirname(path) };
}

function readConfigText(path: string): string {
  try {
    return readFileSync(path, 'utf8');
  } catch (err) {
    throw new ConfigError(`cannot read config file ${path}: ${(err as Error).message}`);
  }
}

const isPlainObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

/** A gateway key written into the file itself is a secret at rest: the file should hold ${ENV} or sha256. */
function plainTextKeys(text: string): string[] {
  const raw = parseDocument(text).toJS() as {
    workspaces?: { id?: unknown; keys?: { id?: unknown; key?: unknown }[] }[];
  } | null;
  const out: string[] = [];
  for (const [w, ws] of (raw?.workspaces ?? []).entries()) {
    for (const [k, entry] of (ws?.keys ?? []).entries()) {
      if (typeof entry?.key === 'string' && entry.key !== '' && !entry.key.includes('${')) {
        out.push(
          `workspaces[${w}].keys[${k}].key is written in the config file as plain text: use an \${ENV} reference or its sha256`,
        );
      }
    }
  }
  return out;
}

/** YAML text -> validated config. Interpolation runs on parsed string values, so an env value can never inject YAML. */
export function parseConfig(text: string, env: NodeJS.ProcessEnv = process.env, source = 'config'): GatewayConfig {
  return validate(interpolate(parseYaml(text, source), env, []), source);
}

/** YAML text -> plain values ({} for an empty file), or a ConfigError with the parser's first line. */
function parseYaml(text: string, source: string): unknown {
  const doc = parseDocument(text);
  // The parser's message goes on with a code frame of the line after "at line L, column C:"; the first line says it all.
  if (doc.errors.length > 0)
    throw new ConfigError(`${source}: invalid YAML: ${doc.errors[0].message.split('\n')[0].replace(/:$/, '')}`);
  return doc.toJS() ?? {};
}

export function validate(raw: unknown, source = 'config'): GatewayConfig {
  const result = gatewayConfigSchema.safeParse(raw);
  if (!result.success) {
    const lines = result.error.issues.map((i) => `  - ${formatPath(i.path)}: ${describeIssue(i)}`);
    throw new ConfigError(`${source} is invalid:\n${lines.join('\n')}`);
  }
  return result.data;
}

const ENV_REF = /\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}/g;

/** Replaces ${VAR} and ${VAR:-default} in every string. An unset ${VAR} without default is an error naming the key. */
function interpolate(value: unknown, env: NodeJS.ProcessEnv, path: (string | number)[]): unknown {
  if (typeof value === 'string') {
    return value.replace(ENV_REF, (_m, name: string, fallback: string | undefined) => {
      const v = env[name];
      if (v !== undefined && v !== '') return v;
      if (fallback !== undefined) return fallback;
      throw new ConfigError(
        `${formatPath(path)}: environment variable ${name} is not set (use \${${name}:-default} for an optional value)`,
      );
    });
  }
  if (Array.isArray(value)) return value.map((v, i) => interpolate(v, env, [...path, i]));
  if (value && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, interpolate(v, env, [...path, k])]));
  }
  return value;
}

function formatPath(path: readonly PropertyKey[]): string {
  return path.length === 0
    ? '(top level)'
    : path
        .map((p) => (typeof p === 'number' ? `[${p}]` : String(p)))
        .join('.')
        .replace(/\.\[/g, '[');
}

function describeIssue(issue: z.core.$ZodIssue): string {
  if (issue.code === 'unrecognized_keys')
    return `unknown key${issue.keys.length > 1 ? 's' : ''} ${issue.keys.map((k) => `"${k}"`).join(', ')}`;
  return issue.message;
}
