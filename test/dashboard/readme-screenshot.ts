/**
 * Makes docs/dashboard.png, the README's screenshot: `tollgate demo`'s realistic data (real requests through
 * the gateway to a loopback mock provider) shown by the dashboard in headless Chromium.
 *   npm run screenshot:dashboard
 */
import 'reflect-metadata';
import { mkdirSync } from 'node:fs';
import { resolve } from 'node:path';
import { startDemo } from '../../cli/demo';
import { ensureChromium, launchChromium } from './browser';

async function main(): Promise<void> {
  const out = resolve(__dirname, '../../../docs/dashboard.png');
  const chromium = await ensureChromium();
  if (!chromium) throw new Error('Chromium is needed for the screenshot');
  const demo = await startDemo({ requests: 6000, days: 14, log: (l) => process.stderr.write(`${l}\n`) });
  const browser = await launchChromium(chromium);
  try {
    const page = await browser.newPage({ viewport: { width: 1440, height: 900 } });
    await page.goto(`${demo.adminUrl}/`);
    await page.fill('#token', demo.token);
    await page.click('#login button[type=submit]');
    await page.waitForSelector('#view[data-view="usage"][data-ready="true"]');
    mkdirSync(resolve(out, '..'), { recursive: true });
    await page.screenshot({ path: out, fullPage: true });
    process.stderr.write(`wrote ${out} (${demo.sent} demo requests)\n`);
  } finally {
    await browser.close();
    await demo.stop();
  }
}

main().catch((err) => {
  process.stderr.write(`${(err as Error).stack ?? err}\n`);
  process.exit(1);
});
