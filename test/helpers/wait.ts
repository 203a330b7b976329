/** Resolves after `ms` milliseconds. */
export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Polls `ok` every 50 ms until it holds; throws "<what> not met within <ms> ms" when the time is up. */
export async function waitFor(ok: () => boolean | Promise<boolean>, ms: number, what = 'condition'): Promise<void> {
  const end = Date.now() + ms;
  while (!(await ok())) {
    if (Date.now() > end) throw new Error(`${what} not met within ${ms} ms`);
    await sleep(50);
  }
}
