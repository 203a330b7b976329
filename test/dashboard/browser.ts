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
import { chromium, type Browser, type BrowserContext, type BrowserContextOptions, type Page } from 'playwright-core';
import { startTestGateway, TEST_ADMIN_TOKEN, type TestGateway } from '../helpers/gateway';
import { announce, IN_CI, missingService } from '../helpers/services';
import { TestUpstream } from '../helpers/upstream';

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

/** Signs `page` in to the gateway's dashboard with the admin token, and waits for its usage view. */
export async function signIn(page: Page, adminUrl: string, token = TEST_ADMIN_TOKEN): Promise<void> {
  await page.goto(`${adminUrl}/`);
  await page.fill('#token', token);
  await page.click('#login button[type=submit]');
  await page.waitForSelector('#view[data-view="usage"][data-ready="true"]');
}

/** What a browser suite works with, filled in by its before() hook. */
export interface DashboardSuite {
  upstream: TestUpstream;
  gw: TestGateway;
  browser: Browser;
  context: BrowserContext;
  page: Page;
}

export interface DashboardSuiteOptions {
  /** Extra gateway.config.yaml (or a function making it, for URLs known only once hooks ran) and environment. */
  yaml?: string | (() => string);
  env?: NodeJS.ProcessEnv;
  /** What the suite needs in the gateway (records, keys) before the browser opens; the upstream answers it. */
  seed?: (gw: TestGateway, upstream: TestUpstream) => Promise<void>;
  /** 1280 x 900 unless given. */
  viewport?: { width: number; height: number };
  context?: Omit<BrowserContextOptions, 'viewport'>;
  /** The hook's time limit once Chromium is there (60 s unless given): seeding many records takes longer. */
  timeoutMs?: number;
  /** Runs on the new page before it loads anything (listeners, permissions). */
  prepare?: (suite: DashboardSuite) => Promise<void> | void;
  /** false: the page is left blank, for a suite that signs in as one of its tests. */
  signIn?: boolean;
}

/**
 * The before() and after() every browser suite shares: Chromium (without it the suite is skipped with a SKIPPED
 * line, or fails in CI), the recorded test upstream, a gateway in front of it, the suite's seed, and a page signed in
 * to the dashboard. Call it in the describe() body; read the fields in the tests.
 */
export function useDashboard(o: DashboardSuiteOptions = {}): DashboardSuite {
  const suite = { upstream: new TestUpstream() } as DashboardSuite;
  before(async function () {
    this.timeout(15 * 60_000); // a first run may install Chromium
    const chromium = await ensureChromium();
    if (!chromium) return this.skip(); // ensureChromium said why: a SKIPPED line (in CI it threw instead)
    this.timeout(o.timeoutMs ?? 60_000);
    await suite.upstream.start();
    suite.gw = await startTestGateway(suite.upstream.url, typeof o.yaml === 'function' ? o.yaml() : o.yaml, o.env);
    await o.seed?.(suite.gw, suite.upstream);
    suite.browser = await launchChromium(chromium);
    suite.context = await suite.browser.newContext({
      viewport: o.viewport ?? { width: 1280, height: 900 },
      ...o.context,
    });
    suite.page = await suite.context.newPage();
    await o.prepare?.(suite);
    if (o.signIn !== false) await signIn(suite.page, suite.gw.adminUrl!);
  });
  after(async () => {
    await suite.browser?.close();
    await suite.gw?.stop();
    await suite.upstream.stop();
  });
  return suite;
}
