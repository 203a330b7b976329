/**
 * Version of the public plugin and provider-module API (the exports of core/index.ts). A plugin or provider
 * module may declare the version it was written against (`apiVersion: '1'`); the loader refuses a mismatch
 * at start-up instead of failing on the first request. Bumped only for breaking changes to the contracts;
 * additions (a new context field, a new optional hook) keep the version.
 */
export const PLUGIN_API_VERSION = '1';

/** Why a module declaring `declared` cannot run on this gateway, or undefined when it can. */
export function apiVersionProblem(declared: unknown): string | undefined {
  if (declared === undefined || declared === PLUGIN_API_VERSION) return undefined;
  return `it needs plugin API version ${JSON.stringify(declared)}, but this Tollgate provides version "${PLUGIN_API_VERSION}"`;
}
