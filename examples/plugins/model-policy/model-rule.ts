/**
 * A workspace's model rule: `allow` and `deny` lists of model names, each either exact ("gpt-4o-mini") or a
 * prefix ending in "*" ("claude-*"). Deny wins; a non-empty allow list admits only what it matches.
 */
export interface ModelRule {
  allow?: readonly string[];
  deny?: readonly string[];
}

const matches = (pattern: string, model: string): boolean =>
  pattern.endsWith('*') ? model.startsWith(pattern.slice(0, -1)) : model === pattern;

/** Why the rule refuses the model, or undefined when it admits it. */
export function refusalReason(rule: ModelRule, model: string): string | undefined {
  const denied = rule.deny?.find((p) => matches(p, model));
  if (denied) return `it matches the deny pattern "${denied}"`;
  if (rule.allow && rule.allow.length > 0 && !rule.allow.some((p) => matches(p, model))) {
    return `it is not in the allow list (${rule.allow.join(', ')})`;
  }
  return undefined;
}
