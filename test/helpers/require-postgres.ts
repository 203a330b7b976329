/**
 * DATABASE_URL for a suite that runs on the real PostgreSQL. Unset: a SKIPPED line and the suite skipped, or, with
 * CI=true, a FAILED line and an error, so that a CI run cannot pass without PostgreSQL.
 */
export async function requirePostgres(ctx: Mocha.Context, suite: string): Promise<string> {
  const url = process.env.DATABASE_URL;
  if (url) return url;
  if (/^(true|1|yes)$/i.test(process.env.CI ?? '')) {
    console.log(`\n  FAILED: ${suite}: DATABASE_URL is not set (CI=${process.env.CI})\n`);
    throw new Error(`${suite} cannot run in CI without DATABASE_URL`);
  }
  console.log(`\n  SKIPPED: ${suite} (set DATABASE_URL=postgres://... to run it)\n`);
  ctx.skip();
  throw new Error('unreachable: skip() throws');
}
