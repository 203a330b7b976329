/**
 * TOKENS.Clock: the time budget periods are counted in (epoch ms). A test replaces it to stand at a period's last
 * second. Rate windows are counted in the limit store's own clock (Redis's, when shared), so they do not use it.
 */
export interface Clock {
  now(): number;
}

/** The wall clock, as the runtime registers it. */
export const systemClock: Clock = Object.freeze({ now: () => Date.now() });
