import type { z } from 'zod';

/** Shortest gateway key or admin token accepted: ~140 bits even from a 64-character alphabet, beyond guessing. */
export const MIN_SECRET_LENGTH = 24;

interface Secrets {
  security: { allow_weak_keys: boolean };
  admin: { token?: string };
  workspaces: { keys: { key?: string }[] }[];
}

/**
 * Refuses a gateway key or an admin token shorter than MIN_SECRET_LENGTH: the lockout slows guessing down but
 * cannot make a short secret safe. An empty value is no key (`${GATEWAY_KEY:-}` unset), and a key given as its
 * sha256 cannot be measured. security.allow_weak_keys lets tests and demos use short ones.
 */
export function refuseWeakSecrets(config: Secrets, ctx: z.core.$RefinementCtx): void {
  if (config.security.allow_weak_keys) return;
  const advice = `at least ${MIN_SECRET_LENGTH} characters are required (\`tollgate keys create\` makes a strong key; security.allow_weak_keys: true accepts short ones, for tests only)`;
  const token = config.admin.token;
  if (token && token.length < MIN_SECRET_LENGTH) {
    ctx.addIssue({
      code: 'custom',
      path: ['admin', 'token'],
      message: `the admin token has ${token.length} characters: ${advice}`,
    });
  }
  config.workspaces.forEach((w, i) =>
    w.keys.forEach((k, j) => {
      if (k.key && k.key.length < MIN_SECRET_LENGTH) {
        ctx.addIssue({
          code: 'custom',
          path: ['workspaces', i, 'keys', j, 'key'],
          message: `this gateway key has ${k.key.length} characters: ${advice}`,
        });
      }
    }),
  );
}
