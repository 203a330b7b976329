import { GatewayError, RESERVED_TAG_KEYS, truncate } from '../../api';

export interface TagLimits {
  maxKeys: number;
  maxKeyLength: number;
  maxValueLength: number;
}

/** How the tag headers of a request are read. */
export interface TagHeaders {
  /** A header's value by lower-case name (repeated headers joined with ", ", as Node does). */
  header(name: string): string | undefined;
  /** The names of the request's headers, lower-case. */
  names: readonly string[];
  /**
   * How many times a header was sent, when the core can tell (Node joins a repeated header into "a, b", which
   * cannot be told apart from one header with that value). A tag header sent twice is refused.
   */
  timesSent?: (name: string) => number;
}

export const METADATA_HEADER = 'x-gateway-metadata';
export const FLAT_PREFIX = 'x-gateway-metadata-';
const KEY_SHAPE = /^[a-z0-9_][a-z0-9_.]*$/;
/** Tags the gateway writes itself (e.g. gateway.max_tokens_applied): a client cannot send one to forge a record. */
export const GATEWAY_TAG_PREFIX = 'gateway.';
const NON_ASCII = /[\u0080-\uffff]/;
const UTF8 = new TextDecoder('utf-8', { fatal: true });

/** Tag keys are case-insensitive and use underscores: "Customer-Id" and "customer_id" are the same dimension. */
export function normaliseTagKey(key: string): string {
  return key.trim().toLowerCase().replace(/-/g, '_');
}

function invalid(message: string): GatewayError {
  return new GatewayError(
    'invalid_metadata',
    `${message} Attribution tags come from X-Gateway-Metadata (a JSON object of string values) and X-Gateway-Metadata-<Name> headers.`,
    { param: 'X-Gateway-Metadata' },
  );
}

/**
 * A header value as the client wrote it. Node gives header bytes as latin1 (one character per byte); clients
 * send UTF-8 ("Zürich" arrives as "ZÃ¼rich"), so the bytes are decoded again as UTF-8. Bytes that are not
 * valid UTF-8 are refused rather than stored garbled. ASCII (most values) is returned as is.
 */
function utf8(value: string, source: string): string {
  if (!NON_ASCII.test(value)) return value;
  try {
    return UTF8.decode(Buffer.from(value, 'latin1'));
  } catch {
    throw invalid(`${source} is not valid UTF-8.`);
  }
}

function put(tags: Record<string, string>, rawKey: string, value: unknown, limits: TagLimits, source: string): string {
  const key = normaliseTagKey(rawKey);
  if (!KEY_SHAPE.test(key) || key.length > limits.maxKeyLength) {
    throw invalid(
      `Invalid tag key "${truncate(rawKey, 80)}" in ${source}: use letters, digits, _ . - (at most ${limits.maxKeyLength} characters).`,
    );
  }
  if (key.startsWith(GATEWAY_TAG_PREFIX)) {
    throw invalid(
      `Tag key "${key}" in ${source} is reserved: keys starting with "${GATEWAY_TAG_PREFIX}" are set by the gateway itself.`,
    );
  }
  if (RESERVED_TAG_KEYS.has(key)) {
    throw invalid(
      `Tag key "${key}" in ${source} is reserved: it names a built-in dimension (${[...RESERVED_TAG_KEYS].join(', ')}) and could not be grouped by. Use another name, e.g. "${key}_tag".`,
    );
  }
  if (typeof value !== 'string')
    throw invalid(`Tag "${key}" in ${source} must be a string, got ${value === null ? 'null' : typeof value}.`);
  if (value.length === 0 || value.length > limits.maxValueLength) {
    throw invalid(`Tag "${key}" in ${source} must be 1 to ${limits.maxValueLength} characters long.`);
  }
  // eslint-disable-next-line no-control-regex -- control characters are exactly what is refused
  if (/[\u0000-\u001f\u007f]/.test(value)) throw invalid(`Tag "${key}" in ${source} contains control characters.`);
  tags[key] = value;
  return key;
}

/** JSON string tokens in a text: unescaped double quotes, halved. */
function stringTokens(json: string): number {
  let quotes = 0;
  for (let i = 0; i < json.length; i++) {
    const c = json.charCodeAt(i);
    if (c === 92)
      i++; // a backslash escapes the next character
    else if (c === 34) quotes++;
  }
  return quotes / 2;
}

/** The first key given twice in the JSON text (its string tokens alternate key, value); only run on a refusal. */
function duplicatedKey(json: string): string {
  const tokens = json.match(/"(?:[^"\\]|\\.)*"/g) ?? [];
  const seen = new Set<string>();
  for (let i = 0; i < tokens.length; i += 2) {
    const key = normaliseTagKey(JSON.parse(tokens[i]) as string);
    if (seen.has(key)) return key;
    seen.add(key);
  }
  return '?';
}

function twice(key: string): GatewayError {
  return invalid(
    `Tag "${truncate(key, 80)}" is given twice in X-Gateway-Metadata (keys are case-insensitive, "-" and "_" are the same).`,
  );
}

function refuseRepeated(h: TagHeaders, name: string): void {
  if ((h.timesSent?.(name) ?? 1) > 1) throw invalid(`The header ${truncate(name, 100)} was sent more than once.`);
}

/**
 * Reads the attribution tags. Both forms merge; on a clash the flat X-Gateway-Metadata-<Name> header wins,
 * because it is the more specific, per-call setting (a client usually sets the JSON header once as a default).
 * Within one form a key must appear once. Bad input is refused with a 400 rather than dropped, so a client
 * learns at once that its attribution is wrong.
 */
export function parseTags(h: TagHeaders, limits: TagLimits): Record<string, string> {
  const tags: Record<string, string> = Object.create(null);
  const raw = h.header(METADATA_HEADER);
  if (raw !== undefined) {
    refuseRepeated(h, METADATA_HEADER);
    const json = utf8(raw, 'X-Gateway-Metadata');
    let parsed: unknown;
    try {
      parsed = JSON.parse(json);
    } catch {
      throw invalid('X-Gateway-Metadata is not valid JSON.');
    }
    if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed))
      throw invalid('X-Gateway-Metadata must be a JSON object.');
    const entries = Object.entries(parsed);
    for (const [k, v] of entries) {
      if (normaliseTagKey(k) in tags) throw twice(normaliseTagKey(k)); // "Agent" and "agent"
      put(tags, k, v, limits, 'X-Gateway-Metadata');
    }
    // Every value is a string by now, so the text holds two string tokens per key: more means a key was given
    // twice to the letter, which JSON.parse resolves silently by keeping the last.
    if (stringTokens(json) !== 2 * entries.length) throw twice(duplicatedKey(json));
  }
  const flat = new Set<string>();
  for (const name of h.names) {
    if (!name.startsWith(FLAT_PREFIX)) continue;
    refuseRepeated(h, name);
    const source = `header ${truncate(name, 100)}`;
    const key = put(tags, name.slice(FLAT_PREFIX.length), utf8(h.header(name) ?? '', source), limits, source);
    if (flat.has(key)) throw invalid(`Tag "${key}" is given by two X-Gateway-Metadata-<Name> headers.`);
    flat.add(key);
  }
  if (Object.keys(tags).length > limits.maxKeys)
    throw invalid(`Too many tags: at most ${limits.maxKeys} keys per request.`);
  return tags;
}
