/**
 * Mocha root hooks (loaded through .mocharc.json "require"): the suite-wide secret scan, and the list of the suites
 * skipped for a missing service (helpers/services.ts) said again at the end of the run.
 *
 * Every gateway the test helpers start registers itself (helpers/secret-scan.ts); after the whole run this hook
 * scans every registered gateway's log lines, the admin answers read when it stopped (records, usage, keys,
 * budgets, info) and every file in its data folder (SQLite database and WAL, spill and quarantine files) for the
 * planted secrets and for every gateway key created during the run, and fails the run naming where it found one.
 *
 * Gateway keys created during the run are collected as they are handed out: admin POST /api/keys answers (an
 * undici interceptor on the global dispatcher, observing only those answers), `tollgate keys create` output (an
 * observer on child_process.execFile), the key a first start announces (helpers/gateway.ts, helpers/process.ts)
 * and keys created in the dashboard (the browser test). Anything shaped like a generated key counts too.
 *
 * Every admin answer read through undici is also checked against the OpenAPI document (helpers/admin-contract.ts):
 * reading a mismatching answer fails, and the run fails at its end listing every mismatch and the test that read it.
 *
 * Focused runs with --no-config load it with: --require dist/test/helpers/root-hooks.js
 */
import childProcess from 'node:child_process';
import { promisify } from 'node:util';
import type { Dispatcher } from 'undici';
import {
  adminAnswersDuring,
  checkedAdminAnswers,
  contractError,
  observeAdminAnswers,
  takeContractViolations,
} from './admin-contract';
import { observeAnswers } from './answer-observer';
import { recordFigures } from './figures';
import { TEST_ADMIN_TOKEN } from './gateway';
import { removeOwnRedisKeys } from './redis-cleanup';
import { PLANTED_SECRETS } from './reliability';
import { knownSecrets, rememberGeneratedKeys, rememberSecret, scanAll } from './secret-scan';
import { announce, skippedSuites } from './services';

for (const s of PLANTED_SECRETS) rememberSecret(s, 'planted secret');

// ---------------------------------------------------------------- admin POST /api/keys answers

const createsKey = (opts: Dispatcher.DispatchOptions) =>
  opts.method === 'POST' && /\/api\/keys\/?(?:\?|$)/.test(opts.path);
/** The body of a 201 answer to POST /api/keys is the one place a new key is handed out. */
observeAnswers(createsKey, (_opts, answer) => {
  if (answer.status === 201) rememberGeneratedKeys(answer.body, 'a key created through POST /api/keys');
});

// ---------------------------------------------------------------- every admin answer against the OpenAPI document

observeAdminAnswers();

function reportAdminAnswers() {
  const violations = takeContractViolations();
  if (violations.length) throw contractError(violations);
  const seen = checkedAdminAnswers();
  const total = [...seen.values()].reduce((a, b) => a + b, 0);
  if (total === 0) return;
  const kinds = [...seen.entries()].sort(([a], [b]) => (a < b ? -1 : 1)).map(([k, n]) => `${k}: ${n}`);
  process.stdout.write(
    `\n  admin answers checked against the OpenAPI document: ${total}, all valid (${kinds.join(', ')})\n`,
  );
}

// ---------------------------------------------------------------- `tollgate keys create` output

const isKeysCreate = (args: unknown[]) =>
  Array.isArray(args[1]) && args[1].includes('keys') && args[1].includes('create');
const cp = childProcess as unknown as Record<string, any>;
const execFile = cp.execFile;
const observedExecFile = function (this: unknown, ...args: unknown[]) {
  const child = execFile.apply(this, args);
  if (isKeysCreate(args)) {
    let out = '';
    child.stdout?.on('data', (d: Buffer | string) => (out += d.toString()));
    child.once('close', () => rememberGeneratedKeys(out, 'a key created with `tollgate keys create`'));
  }
  return child;
} as any;
observedExecFile[promisify.custom] = (...args: unknown[]) => {
  const promise = execFile[promisify.custom](...args);
  if (isKeysCreate(args))
    promise.then(
      (r: { stdout: unknown }) => rememberGeneratedKeys(String(r.stdout), 'a key created with `tollgate keys create`'),
      () => undefined,
    );
  return promise; // unchanged (it carries .child)
};
cp.execFile = observedExecFile;

// ---------------------------------------------------------------- the scan

export const mochaHooks = {
  beforeEach(this: Mocha.Context) {
    adminAnswersDuring(this.currentTest?.fullTitle() ?? '(a test)');
  },
  afterEach(this: Mocha.Context) {
    adminAnswersDuring(`the hooks after "${this.currentTest?.fullTitle() ?? '(a test)'}"`);
  },
  afterAll: [announceSkippedSuites, secretScan, reportAdminAnswers, cleanRedis],
};

/** The Redis keys the run made (with REDIS_URL): removed, so that runs do not pile them up on a shared server. */
async function cleanRedis(this: Mocha.Context) {
  const url = process.env.REDIS_URL;
  if (!url) return;
  this.timeout(30_000);
  await removeOwnRedisKeys(url).catch((err: Error) =>
    process.stdout.write(`\n  (the run's Redis keys could not be removed: ${err.message})\n`),
  );
}

/** Said again at the end, where a reader of the run looks, not only where each suite was skipped. */
function announceSkippedSuites() {
  if (skippedSuites.length)
    announce(
      `SKIPPED in this run: ${skippedSuites.length} suite(s)\n${skippedSuites.map((s) => `  - ${s}`).join('\n')}`,
    );
}

async function secretScan(this: Mocha.Context) {
  this.timeout(180_000);
  const started = Date.now();
  const { findings, stats } = await scanAll(TEST_ADMIN_TOKEN);
  const created = knownSecrets().length - PLANTED_SECRETS.length;
  const summary =
    `secret scan of the whole run: ${stats.gateways} gateways, ${stats.logLines} log lines, ${stats.adminAnswers} admin answers (${stats.records} records), ${stats.alertPayloads} alert payloads, ` +
    `${stats.files} files at rest (${(stats.bytes / 2 ** 20).toFixed(1)} MB), ${PLANTED_SECRETS.length} planted secrets + ${created} gateway keys created during the run ` +
    `+ anything shaped like a generated key (${Date.now() - started} ms)`;
  if (stats.snapshotProblems.length) {
    process.stdout.write(
      `\n  (secret scan: the admin answers of ${stats.snapshotProblems.length} gateway(s) could not all be read when they stopped; their logs and files were scanned: ${stats.snapshotProblems.slice(0, 3).join(' | ')})\n`,
    );
  }
  recordFigures('secret-scan', 'last-run', {
    ...stats,
    snapshotProblems: stats.snapshotProblems.length,
    gateway_keys_created: created,
    found: findings.length,
  });
  if (findings.length === 0) {
    process.stdout.write(`\n  ${summary}: none found\n`);
    return;
  }
  const lines = findings.slice(0, 30).map((f) => `  - ${f.secret} in ${f.where}, line ${f.line}: ${f.excerpt}`);
  const bar = '!'.repeat(100);
  const message = `SECRET LEAK: ${findings.length} occurrence(s) of a secret in what the gateways wrote\n${lines.join('\n')}${findings.length > 30 ? `\n  ... and ${findings.length - 30} more` : ''}`;
  process.stdout.write(`\n${bar}\n${message}\n${bar}\n  (${summary})\n`);
  throw new Error(message);
}
