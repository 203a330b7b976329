/**
 * The parts of the admin API's OpenAPI document that its paths share: answer bodies from the zod schemas of
 * ./answers, and the error answers in the gateway's error shape.
 */
import { z } from 'zod';
import type { ErrorCode } from '../../core/errors';
import { BUCKETS_MAX, INTERVAL_ROWS_MAX } from '../query-params';
import { answerSchemas, errorBody } from './answers';

export type Json = Record<string, unknown>;

export const COMPONENTS = '#/components/schemas/';

/** A schema: a component ($ref) when it has an id, inline JSON Schema otherwise. */
export function schemaOf(schema: z.ZodType): Json {
  const id = answerSchemas.get(schema)?.id;
  if (id) return { $ref: `${COMPONENTS}${id}` };
  return bare(z.toJSONSchema(schema, { unrepresentable: 'throw' }) as Json);
}

/** toJSONSchema marks each schema as a whole document ($schema, $id); inside OpenAPI they are parts of one. */
export function bare({ $schema: _schema, $id: _id, ...rest }: Json): Json {
  return rest;
}

export const json = (schema: z.ZodType, description: string) => ({
  description,
  content: { 'application/json': { schema: schemaOf(schema) } },
});

export const error = (description: string, codes: ErrorCode[], headers?: Json) => ({
  description: `${description} (code: ${codes.join(', ')})`,
  ...(headers ? { headers } : {}),
  content: { 'application/json': { schema: bare(z.toJSONSchema(errorBody(codes)) as Json) } },
});

export const retryAfter = {
  description: 'Seconds to wait before trying again.',
  required: true,
  schema: { type: 'string', pattern: '^[0-9]+$' },
};

export const responses = {
  InvalidQuery: error('A query parameter is malformed; param names it', ['invalid_body']),
  InvalidUsageQuery: error(
    `A query parameter is malformed, or the range holds more than ${BUCKETS_MAX} buckets of the interval (or, grouped, more than ${INTERVAL_ROWS_MAX} rows: limit x buckets); param names it, the message the limit`,
    ['invalid_body', 'range_too_large'],
  ),
  QueryFailed: error(
    'The query ran past admin.query_timeout_ms, or needed more memory than the admin reader thread may use: it was cancelled, and the gateway serves on. Narrow the range or the filters. Or the usage store cannot be reached (store_unavailable, with Retry-After)',
    ['query_timeout', 'query_too_large', 'store_unavailable'],
    { 'Retry-After': { ...retryAfter, required: false } },
  ),
  StoreUnavailable: error(
    'The usage store cannot be reached: try again after Retry-After seconds; the proxy serves on meanwhile',
    ['store_unavailable'],
    { 'Retry-After': retryAfter },
  ),
  Unauthorized: error('Missing or invalid admin token', ['admin_token_invalid']),
  AuthBlocked: error('Too many wrong admin tokens from this client address: blocked for a while', ['auth_blocked'], {
    'Retry-After': retryAfter,
  }),
  /** GET /api/usage.csv: AuthBlocked, or the bound on exports of every group at once. */
  AuthBlockedOrExportsBusy: error(
    'Too many wrong admin tokens from this client address (auth_blocked); or, with limit=all, admin.exports_max exports of every group are running already (concurrency_limited): try again after Retry-After seconds',
    ['auth_blocked', 'concurrency_limited'],
    { 'Retry-After': retryAfter },
  ),
  InternalError: error('The gateway failed; details are in its log, never in the answer', ['internal_error']),
};
export const ref = (name: keyof typeof responses) => ({ $ref: `#/components/responses/${name}` });

/** Errors any token-protected route may answer. */
export const guarded = { '401': ref('Unauthorized'), '429': ref('AuthBlocked'), '500': ref('InternalError') };
/** ...and those of a route that reads the store (on the admin API's reader thread, within the time limit). */
export const reading = { ...guarded, '503': ref('QueryFailed') };
/** ...and those of a route that writes to the store (or reads it on the proxy's thread). */
export const writing = { ...guarded, '503': ref('StoreUnavailable') };
