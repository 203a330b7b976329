/**
 * Headless Chromium for the dashboard tests: Debian's /usr/bin/chromium driven by playwright-core over CDP
 * (no browser download). Where the Debian packages chromium and chromium-driver are missing and we are root (CI),
 * they are installed with apt-get. When Chromium cannot be had: in CI (CI=true) the browser suites FAIL, loudly;
 * elsewhere they are skipped with a loud SKIPPED line (helpers/services.ts, like every suite that needs a service).
 *
 * TOLLGATE_CHROMIUM / TOLLGATE_CHROMEDRIVER point elsewhere (another distribution's paths).
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';
import { announce, IN_CI, missingService } from '../helpers/services';

const SUITE = 'dashboard browser tests';
export const CHROMIUM = process.env.TOLLGATE_CHROMIUM || '/usr/bin/chromium';
export const CHROMEDRIVER = process.env.TOLLGATE_CHROMEDRIVER || '/usr/bin/chromedriver';
export const CHROMIUM_ARGS = [
  '--no-sandbox',
  '--disable-gpu',
  '--disable-dev-shm-usage',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--no-first-run',
];

/** Screenshots for people to look at (git-ignored). */
export const RESULTS_DIR = resolve(__dirname, '../../../test-results');

export function resultPath(name: string): string {
  mkdirSync(RESULTS_DIR, { recursive: true });
  return join(RESULTS_DIR, name);
}

let available: Promise<string | undefined> | undefined;

/**
 * The Chromium path, installing the Debian packages chromium and chromium-driver first where missing and allowed.
 * Without Chromium: undefined after a loud SKIPPED line, or, in CI, an error (the suite fails).
 */
export function ensureChromium(): Promise<string | undefined> {
  return (available ??= (async () => {
    const missing = [
      ...(existsSync(CHROMIUM) ? [] : ['chromium']),
      ...(existsSync(CHROMEDRIVER) ? [] : ['chromium-driver']),
    ];
    if (missing.length === 0) return CHROMIUM;
    const root = typeof process.getuid === 'function' && process.getuid() === 0;
    if (!root)
      return unavailable(
        `${missing.join(' and ')} missing (${CHROMIUM}, ${CHROMEDRIVER}) and this is not root: install with "sudo apt-get install -y chromium chromium-driver"`,
        missing,
      );
    process.stdout.write(
      `      (dashboard tests: installing Debian's ${missing.join(' and ')}: apt-get update && apt-get install -y ${missing.join(' ')})\n`,
    );
    try {
      const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
      execFileSync('apt-get', ['update'], { stdio: ['ignore', 'ignore', 'inherit'], env, timeout: 300_000 });
      execFileSync('apt-get', ['install', '-y', '--no-install-recommends', ...missing], {
        stdio: ['ignore', 'ignore', 'inherit'],
        env,
        timeout: 600_000,
      });
    } catch (err) {
      return unavailable(
        `installing ${missing.join(' and ')} failed: ${(err as Error).message.split('\n')[0]}`,
        missing,
      );
    }
    const still = [CHROMIUM, CHROMEDRIVER].filter((p) => !existsSync(p));
    if (still.length)
      return unavailable(
        `apt-get installed ${missing.join(' and ')} but ${still.join(' and ')} is still missing`,
        missing,
      );
    return CHROMIUM;
  })());
}

/**
 * Chromium (or only its driver) could not be had. Without Chromium the browser tests cannot run: a failure in CI,
 * a SKIPPED line elsewhere. Without only chromium-driver (playwright-core does not use it), they still run outside CI.
 */
function unavailable(why: string, missing: string[]): string | undefined {
  if (missing.includes('chromium') || IN_CI) {
    missingService(SUITE, why); // throws in CI
    return undefined;
  }
  announce(`WARNING: ${SUITE}: ${why}`);
  return CHROMIUM;
}

/** Launches Chromium headless; a launch that fails is an error everywhere (it was found, so it must work). */
export async function launchChromium(executablePath: string): Promise<Browser> {
  try {
    return await chromium.launch({ executablePath, headless: true, args: CHROMIUM_ARGS, timeout: 30_000 });
  } catch (err) {
    announce(`FAILED: ${SUITE}: ${executablePath} did not launch: ${(err as Error).message.split('\n')[0]}`);
    throw err;
  }
}

/** A new page of `browser` at `viewport`, signed in to the gateway's dashboard, its usage view shown. */
export async function openDashboard(
  browser: Browser,
  adminUrl: string,
  token: string,
  viewport: { width: number; height: number },
): Promise<Page> {
  const page = await (await browser.newContext({ viewport })).newPage();
  await page.goto(`${adminUrl}/`);
  await page.fill('#token', token);
  await page.click('#login button[type=submit]');
  await page.waitForSelector('#view[data-view="usage"][data-ready="true"]');
  return page;
}
