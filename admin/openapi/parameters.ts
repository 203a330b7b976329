/** The query parameters of the admin API's OpenAPI document: they mirror ../query-params.ts and share its limits. */
import { z } from 'zod';
import { BUCKETS_MAX, GROUP_BY_MAX, LIMIT_DEFAULT, LIMIT_MAX, SEARCH_MAX } from '../query-params';
import { bare, type Json } from './responses';

export const param = (name: string, schema: z.ZodType, description: string, extra: Json = {}) => ({
  name,
  in: 'query',
  description,
  schema: bare(z.toJSONSchema(schema) as Json),
  ...extra,
});

export const rangeParams = [
  param(
    'from',
    z.string(),
    'Start of the range (inclusive): epoch milliseconds or an ISO 8601 date. Default: 30 days before `to`.',
    {
      examples: { epoch: { value: '1735689600000' }, iso: { value: '2025-01-01T00:00:00Z' } },
    },
  ),
  param(
    'to',
    z.string(),
    'End of the range (exclusive): epoch milliseconds or an ISO 8601 date. Default: now. Must be after `from`.',
  ),
  param(
    'filter',
    z.record(z.string(), z.string()),
    'Only records whose dimension has this value: filter[<dimension>]=<value>, repeatable. A dimension is a built-in (provider, model, requested_model, endpoint, workspace, key_id, status) or any tag key (`tag:<key>` for a tag named like a built-in). "(none)" matches an absent built-in value, "(untagged)" a record without the tag.',
    { style: 'deepObject', explode: true, examples: { tag: { value: { customer_id: 'acme' } } } },
  ),
];

export const groupBy = (max: number) =>
  param(
    'group_by',
    z.array(z.string()).max(max),
    `Dimensions to group by (at most ${max}), comma-separated or repeated: built-ins or tag keys.`,
    { style: 'form', explode: false },
  );

export const intervalParam = (description: string) => param('interval', z.enum(['hour', 'day']), description);

export const pageParams = (what: string) => [
  param('limit', z.number().int().min(1).max(LIMIT_MAX).default(LIMIT_DEFAULT), `Page size: ${what} in one answer.`),
  param('cursor', z.string(), 'next_cursor of the previous page.'),
];

const usageParams = (limit: z.ZodType, limitDescription: string) => [
  ...rangeParams,
  groupBy(GROUP_BY_MAX),
  intervalParam(
    `Also split every group by UTC hour or day (rows then carry bucket): at most ${BUCKETS_MAX} buckets in the range.`,
  ),
  param('limit', limit, limitDescription),
  param(
    'offset',
    z.number().int().min(0).default(0),
    'Rank of the first group of the page (next_offset of the previous page).',
  ),
  param(
    'search',
    z.string().max(SEARCH_MAX),
    'Only the groups with a value holding this text (case-insensitive) are paged; the others are summed in other.',
  ),
];

const pageLimit = z.number().int().min(1).max(LIMIT_MAX);
const PAGE_LIMIT_HELP = 'Groups in one answer: the most expensive, from offset; the others are summed in other.';

export const usageQuery = usageParams(pageLimit.default(LIMIT_DEFAULT), PAGE_LIMIT_HELP);

/** GET /api/usage.csv: the same, and limit=all exports every group. */
export const usageCsvQuery = usageParams(
  z.union([pageLimit, z.literal('all')]).default(LIMIT_DEFAULT),
  `${PAGE_LIMIT_HELP} all: every group, from offset, with no other line.`,
);
