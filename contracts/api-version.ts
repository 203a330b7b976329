/**
 * Version of the public plugin and provider-module API (the exports of api/index.ts). A plugin or provider
 * module may declare the version it was written against (`apiVersion: '2'`); the loader refuses a version it
 * cannot run at start-up instead of failing on the first request. Bumped for breaking changes to the contracts;
 * additions (a new context field, a new optional hook) keep the version.
 *
 * 2: the response side mirrors admission: onResponse, onStreamEvent and onComplete run in reverse list order, and
 * onComplete only for the plugins the request reached (docs/plugins.md, migration notes).
 */
export const PLUGIN_API_VERSION = '2';

/** The versions this Tollgate runs plugins and provider modules of. */
export const SUPPORTED_API_VERSIONS: readonly string[] = [PLUGIN_API_VERSION];

/** Why a module declaring `declared` cannot run on this gateway, or undefined when it can. */
export function apiVersionProblem(declared: unknown): string | undefined {
  if (declared === undefined || SUPPORTED_API_VERSIONS.includes(declared as string)) return undefined;
  return `it needs plugin API version ${JSON.stringify(declared)}, but this Tollgate provides version "${PLUGIN_API_VERSION}"`;
}
