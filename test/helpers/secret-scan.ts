import { readdirSync, readFileSync } from 'node:fs';
import { SourceMap } from 'node:module';
import { join, relative } from 'node:path';
import { request } from 'undici';
import { PROJECT_ROOT } from './fixtures';

/**
 * The suite-wide secret scan (issue 8): every gateway the test helpers start registers here (its captured log
 * lines, its data folder, its admin URL). When a suite stops a gateway, its admin answers are read first and kept;
 * the data folders are kept on disk. After the whole run, the root hook (root-hooks.ts) scans all of it for every
 * planted secret and every gateway key created during the run, and fails the run naming where each one was found.
 */

export interface AdminAnswer {
  path: string;
  status: number;
  text: string;
}

export interface RegisteredGateway {
  /** in-process (startTestGateway) or a `tollgate start` child process. */
  kind: 'in-process' | 'process';
  /** Where the test started it: test/…/x.test.ts:line. */
  startedAt: string;
  /** Its captured log lines (pino JSON; for a process, everything it wrote to stdout and stderr). */
  logs: () => readonly string[];
  dataDir: string;
  adminUrl?: string;
  /** Its proxy's address: a later gateway's proxy may take a port an earlier one's admin listener had. */
  proxyUrl?: string;
  /** False once a process has exited (a test killed it): its admin API is gone, its output and files remain. */
  alive?: () => boolean;
  /** The admin answers read when the gateway was stopped (or by the root hook, when still running). */
  answers: AdminAnswer[];
  snapshot?: Promise<void>;
  /** Why some admin answers could not be read (the admin listener was already gone...). */
  snapshotProblems: string[];
}

/** secret -> what it is (for the report; never printed whole). */
const secrets = new Map<string, string>();
const registry: RegisteredGateway[] = [];

/**
 * Anything shaped like a generated gateway key (`tg_` + 43 base64url characters: 256 random bits), whether or not
 * the run saw it being created: it must not appear in a log line, a record, an admin answer or a file at rest.
 */
export const GENERATED_KEY = /(?<![A-Za-z0-9_-])tg_[A-Za-z0-9_-]{43}(?![A-Za-z0-9_-])/g;

/** Adds a value that must never appear in what the gateways wrote (a planted key, a gateway key created by a test). */
export function rememberSecret(value: string, what: string): void {
  if (value.length >= 8 && !secrets.has(value)) secrets.set(value, what);
}

/** Every secret known so far. */
export function knownSecrets(): string[] {
  return [...secrets.keys()];
}

/** Gateway keys found in a text (a `keys create` output, an admin answer): each becomes a secret. */
export function rememberGeneratedKeys(text: string, what: string): number {
  let n = 0;
  for (const m of text.matchAll(GENERATED_KEY)) {
    rememberSecret(m[0], what);
    n++;
  }
  return n;
}

export function registeredGateways(): readonly RegisteredGateway[] {
  return registry;
}

/** Registers a gateway for the scan; call snapshotAdmin() before stopping it. */
export function registerGateway(
  g: Omit<RegisteredGateway, 'answers' | 'snapshotProblems' | 'startedAt'> & { startedAt?: string },
): RegisteredGateway {
  const entry: RegisteredGateway = {
    ...g,
    startedAt: g.startedAt ?? callerLocation(),
    answers: [],
    snapshotProblems: [],
  };
  registry.push(entry);
  return entry;
}

const FAR_FUTURE = () => Date.now() + 366 * 24 * 3600_000;

/**
 * Reads what the admin API shows of this gateway (every record, usage groupings, keys, budgets, info) and keeps it
 * for the scan. Once per gateway; a failure is noted, never thrown (the suite's own stop must go on).
 */
export function snapshotAdmin(g: RegisteredGateway, token: string): Promise<void> {
  if (!g.adminUrl) return Promise.resolve();
  if (!g.snapshot && g.alive?.() === false) {
    g.snapshotProblems.push('exited before its admin answers were read (killed by its test)');
    return (g.snapshot = Promise.resolve());
  }
  return (g.snapshot ??= (async () => {
    const range = `from=0&to=${FAR_FUTURE()}`;
    const paths = [
      `/api/usage?${range}&limit=1000`,
      `/api/usage?${range}&group_by=key_id&limit=1000`,
      `/api/usage?${range}&group_by=model,provider&limit=1000`,
      `/api/usage.csv?${range}&group_by=workspace&limit=1000`,
      '/api/info',
      '/api/dimensions',
    ];
    const get = async (path: string): Promise<AdminAnswer | undefined> => {
      try {
        const res = await request(`${g.adminUrl}${path}`, {
          headers: { authorization: `Bearer ${token}` },
          headersTimeout: 5000,
          bodyTimeout: 5000,
        });
        const answer = { path, status: res.statusCode, text: await res.body.text() };
        g.answers.push(answer);
        if (res.statusCode !== 200) g.snapshotProblems.push(`${path}: ${res.statusCode}`);
        return answer;
      } catch (err) {
        g.snapshotProblems.push(`${path}: ${(err as Error).message}`);
        return undefined;
      }
    };
    /** Every page of a list that answers next_cursor. */
    const allPages = async (path: string) => {
      let cursor: string | null = null;
      for (let page = 0; page < 200; page++) {
        const answer = await get(
          `${path}${path.includes('?') ? '&' : '?'}limit=1000${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`,
        );
        if (answer?.status !== 200) break;
        cursor = (JSON.parse(answer.text) as { next_cursor: string | null }).next_cursor;
        if (!cursor) break;
      }
    };
    // Every record, key and budget, page by page.
    await Promise.all([
      ...paths.map(get),
      allPages(`/api/requests?${range}`),
      allPages('/api/keys'),
      allPages('/api/budgets'),
      allPages('/api/alerts'),
    ]);
  })());
}

// ---------------------------------------------------------------- the scan

export interface Finding {
  /** Which secret (its first characters and what it is). */
  secret: string;
  /** Where: a log line, an admin answer, a file. */
  where: string;
  /** 1-based line in that log, answer or file. */
  line: number;
  excerpt: string;
}

/** Files a test wrote into the folder (configs, plugin code) are its input, not the gateway's output. */
const TEST_INPUT = /\.(ya?ml|m?js|cjs|ts)$/;

/** Files in the data folder (recursively) the gateway wrote: the SQLite database and its WAL, spill and quarantine files. */
export function dataFiles(dir: string): string[] {
  let entries;
  try {
    entries = readdirSync(dir, { recursive: true, withFileTypes: true });
  } catch {
    return [];
  }
  return entries
    .filter((e) => e.isFile() && !TEST_INPUT.test(e.name))
    .map((e) => join(e.parentPath ?? (e as any).path, e.name));
}

/** Where `secret` (or a generated key) occurs in `text`; `allowed` exempts a line (the first start's announcement). */
export function scanText(
  text: string,
  where: string,
  list: readonly string[],
  allowed?: (line: string) => boolean,
): Finding[] {
  const found: Finding[] = [];
  const report = (index: number, secret: string, what: string) => {
    const lineStart = text.lastIndexOf('\n', index) + 1;
    const lineEnd = text.indexOf('\n', index);
    const lineText = text.slice(lineStart, lineEnd < 0 ? undefined : lineEnd);
    if (allowed?.(lineText)) return;
    const line = countLines(text, index);
    if (found.some((f) => f.line === line)) return; // one finding per line (a key and the marker inside it)
    let excerpt = lineText.slice(Math.max(0, index - lineStart - 60), index - lineStart + secret.length + 60);
    for (const s of [secret, ...list].sort((a, b) => b.length - a.length))
      excerpt = excerpt.split(s).join(`${s.slice(0, 6)}…`);
    found.push({
      secret: `${secret.slice(0, 12)}… (${what})`,
      where,
      line,
      excerpt: excerpt.replace(GENERATED_KEY, (k) => `${k.slice(0, 6)}…`).replace(/[^\x20-\x7e]/g, '.'),
    });
  };
  for (const secret of list) {
    for (let at = text.indexOf(secret); at >= 0; at = text.indexOf(secret, at + secret.length))
      report(at, secret, secrets.get(secret) ?? 'planted secret');
  }
  for (const m of text.matchAll(GENERATED_KEY)) {
    if (!list.includes(m[0])) report(m.index, m[0], 'shaped like a generated gateway key');
  }
  return found;
}

function countLines(text: string, index: number): number {
  let n = 1;
  for (let i = text.indexOf('\n'); i >= 0 && i < index; i = text.indexOf('\n', i + 1)) n++;
  return n;
}

/** The first start's announcement of the key it created (printed once to the operator, by design). */
export const isKeyAnnouncement = (line: string) => /^ {4}tg_[A-Za-z0-9_-]{43}\s*$/.test(line);

export interface ScanStats {
  gateways: number;
  logLines: number;
  adminAnswers: number;
  records: number;
  files: number;
  bytes: number;
  secrets: number;
  /** Alert payloads the test receivers took. */
  alertPayloads: number;
  snapshotProblems: string[];
}

/** Scans one registered gateway: its log lines, its admin answers, every file in its data folder. */
export function scanGateway(
  g: RegisteredGateway,
  list: readonly string[] = knownSecrets(),
): { findings: Finding[]; logLines: number; answers: number; records: number; files: number; bytes: number } {
  const findings: Finding[] = [];
  const logs = g.logs();
  const label = `${g.kind} gateway started at ${g.startedAt}`;
  const allowed = g.kind === 'process' ? isKeyAnnouncement : undefined;
  const logText = logs.join('\n');
  findings.push(...scanText(logText, `log of the ${label}`, list, allowed));
  let records = 0;
  for (const a of g.answers) {
    findings.push(...scanText(a.text, `admin answer GET ${a.path.split('?')[0]} of the ${label}`, list));
    if (a.path.startsWith('/api/requests') && a.status === 200)
      records += (JSON.parse(a.text) as { data: unknown[] }).data.length;
  }
  const files = dataFiles(g.dataDir);
  let bytes = 0;
  for (const f of files) {
    let content: Buffer;
    try {
      content = readFileSync(f);
    } catch {
      continue; // removed meanwhile (a test cleaning up its own folder)
    }
    bytes += content.length;
    findings.push(...scanText(content.toString('latin1'), `file ${f} (${label})`, list));
  }
  return { findings, logLines: logs.length, answers: g.answers.length, records, files: files.length, bytes };
}

/** Alert payloads test receivers took (webhook and Slack bodies): scanned like the admin answers. */
const alertPayloads: AlertPayload[] = [];

export interface AlertPayload {
  text: string;
  where: string;
}

export function scanAlertPayloads(
  list: readonly string[],
  payloads: readonly AlertPayload[] = alertPayloads,
): Finding[] {
  return payloads.flatMap((p) => scanText(p.text, p.where, list));
}

export function recordAlertPayload(text: string, receiver: string): void {
  alertPayloads.push({ text, where: `alert payload received by ${receiver} (${callerLocation()})` });
}

/** Scans every registered gateway (reading the admin answers of those still running first), and the alert payloads. */
export async function scanAll(token: string): Promise<{ findings: Finding[]; stats: ScanStats }> {
  await Promise.all(registry.map((g) => snapshotAdmin(g, token)));
  const list = knownSecrets();
  const findings: Finding[] = [];
  findings.push(...scanAlertPayloads(list));
  const stats: ScanStats = {
    gateways: registry.length,
    logLines: 0,
    adminAnswers: 0,
    records: 0,
    files: 0,
    bytes: 0,
    secrets: list.length,
    alertPayloads: alertPayloads.length,
    snapshotProblems: [],
  };
  for (const g of registry) {
    const r = scanGateway(g, list);
    findings.push(...r.findings);
    stats.logLines += r.logLines;
    stats.adminAnswers += r.answers;
    stats.records += r.records;
    stats.files += r.files;
    stats.bytes += r.bytes;
    if (g.snapshotProblems.length)
      stats.snapshotProblems.push(`${g.startedAt}: ${g.snapshotProblems.slice(0, 3).join('; ')}`);
  }
  return { findings, stats };
}

// ---------------------------------------------------------------- where a gateway was started

const maps = new Map<string, SourceMap | null>();

/** test/…/x.test.ts:line of the first test file on the stack (helpers skipped), through the compiled source map. */
export function callerLocation(): string {
  const stack = new Error().stack ?? '';
  for (const m of stack.matchAll(/\(?((?:\/|file:\/\/)[^\s()]+\.js):(\d+):(\d+)\)?/g)) {
    const file = m[1].replace(/^file:\/\//, '');
    if (!file.includes('/dist/test/') || file.includes('/dist/test/helpers/')) continue;
    return sourceLocation(file, Number(m[2]), Number(m[3]));
  }
  return 'unknown test';
}

function sourceLocation(file: string, line: number, column: number): string {
  let map = maps.get(file);
  if (map === undefined) {
    try {
      map = new SourceMap(JSON.parse(readFileSync(`${file}.map`, 'utf8')));
    } catch {
      map = null;
    }
    maps.set(file, map);
  }
  const entry = map?.findEntry(line - 1, column - 1) as { originalSource?: string; originalLine?: number } | undefined;
  if (entry?.originalSource && entry.originalLine !== undefined) {
    const source = entry.originalSource.startsWith('file://')
      ? new URL(entry.originalSource).pathname
      : join(file, '..', entry.originalSource);
    return `${relative(PROJECT_ROOT, source)}:${entry.originalLine + 1}`;
  }
  return `${relative(PROJECT_ROOT, file)}:${line}`;
}
