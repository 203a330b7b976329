/** The names usage can be grouped and filtered by: the built-in dimensions and the tags records carry. */

/** The tag value a record carries for a required tag it was sent without (missing_tags: record_untagged). */
export const UNTAGGED = '(untagged)';

/**
 * Built-in dimensions. `model` is the model that served the request: the one the response names when the
 * provider reports it (an aggregator such as OpenRouter), else the requested model; `requested_model` is the
 * model the client asked for. Any other name is a tag key (`tag:<key>` reaches a tag stored under a built-in's
 * name before such keys were refused).
 */
export const BUILTIN_DIMENSIONS = [
  'provider',
  'model',
  'requested_model',
  'endpoint',
  'workspace',
  'key_id',
  'status',
] as const;
export type BuiltinDimension = (typeof BUILTIN_DIMENSIONS)[number];
/** Former name of `model` (the served model), still accepted in group_by and filters. */
export const SERVED_MODEL_ALIAS = 'served_model';
/** Names a tag key may not take (the attribution plugin refuses them): group_by would read the built-in instead. */
export const RESERVED_TAG_KEYS: ReadonlySet<string> = new Set<string>([...BUILTIN_DIMENSIONS, SERVED_MODEL_ALIAS]);
