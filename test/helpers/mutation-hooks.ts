/**
 * Mocha root hooks for the mutation run only (stryker.config.json, mochaOptions.require).
 *
 * With perTest coverage Stryker notes which test is running in a root beforeEach and never clears it, so code
 * that runs in a later suite's before() hook (a gateway starting, a catalog being built) would be credited to the
 * last test of the suite before it. That test alone would then be run against those mutants, and they would pass
 * for survivors. Clearing the id after each test makes such code count as static: its mutants run against every
 * selected test instead.
 */
interface StrykerContext {
  currentTestId?: string;
}

export const mochaHooks = {
  afterEach(): void {
    const stryker = (globalThis as { __stryker__?: StrykerContext }).__stryker__;
    if (stryker) stryker.currentTestId = undefined;
  },
};
