/** The dependencies an operator may let fail readiness (probes.readiness.fail_on); draining always does. */
export const READINESS_DEPENDENCIES = ['store', 'limit_store'] as const;
export type ReadinessDependency = (typeof READINESS_DEPENDENCIES)[number];
