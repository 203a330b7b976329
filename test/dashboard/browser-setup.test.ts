import { execFile } from 'node:child_process';
import { resolve } from 'node:path';
import { promisify } from 'node:util';
import { expect } from 'chai';
import { PROJECT_ROOT } from '../helpers/fixtures';

const run = promisify(execFile);

/**
 * browser.ts when Chromium cannot be had (a child process with both paths pointing nowhere and no apt-get on its
 * PATH): in CI the browser suites fail, loudly; elsewhere they are skipped with a loud SKIPPED line.
 */
describe('dashboard browser setup: never a silent skip in CI', () => {
  const script =
    `require(${JSON.stringify(resolve(PROJECT_ROOT, 'dist/test/dashboard/browser.js'))}).ensureChromium()` +
    `.then((p) => console.log('RESULT ' + p), (e) => { console.log('ERROR ' + e.message); process.exitCode = 3; })`;
  const attempt = (ci: string | undefined) => {
    const env: NodeJS.ProcessEnv = {
      PATH: '/nonexistent-bin',
      TOLLGATE_CHROMIUM: '/nonexistent/chromium',
      TOLLGATE_CHROMEDRIVER: '/nonexistent/chromedriver',
    };
    if (ci !== undefined) env.CI = ci;
    return run(process.execPath, ['-e', script], { env, encoding: 'utf8' }).then(
      (r) => ({ code: 0, out: r.stdout }),
      (e) => ({ code: e.code as number, out: String(e.stdout) }),
    );
  };

  it('CI=true: Chromium missing and not installable is an error (the suite fails), with a loud FAILED line', async () => {
    const { code, out } = await attempt('true');
    expect(code, out).to.equal(3);
    expect(out).to.match(/^!{20,}\nFAILED: dashboard browser tests: /m);
    expect(out).to.include('ERROR dashboard browser tests cannot run in CI');
  });

  it('outside CI: a loud SKIPPED line, and no browser', async () => {
    const { code, out } = await attempt(undefined);
    expect(code, out).to.equal(0);
    expect(out).to.match(/^!{20,}\nSKIPPED: dashboard browser tests: /m);
    expect(out).to.include('RESULT undefined');
  });
});
