/**
 * The CLI's failures as a user meets them: the real built `tollgate` run as a child process, against real SQLite
 * files and (with DATABASE_URL) a real PostgreSQL. A mistake the user can correct is one line on stderr and exit
 * code 2; nothing ever prints a stack trace unless TOLLGATE_DEBUG asks for it.
 */
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { expect } from 'chai';
import { Client } from 'pg';
import { runCli, type CliRun } from '../helpers/cli';
import { PROJECT_ROOT } from '../helpers/fixtures';
import { requirePostgres } from '../helpers/services';

const PG_URL = process.env.DATABASE_URL;

/** Exit code 2 and exactly one line on stderr, "tollgate: ..." matching `pattern`, no stack frame. */
function expectUserError(run: CliRun, pattern: RegExp): void {
  const shown = `exit ${run.code}, stderr:\n${run.stderr}`;
  expect(run.code, shown).to.equal(2);
  expect(run.stderr.endsWith('\n'), shown).to.equal(true);
  const lines = run.stderr.slice(0, -1).split('\n');
  expect(lines, shown).to.have.length(1);
  expect(lines[0], shown).to.match(/^tollgate: /);
  expect(lines[0], shown).to.match(pattern);
  expect(run.stderr, shown).to.not.match(/\n\s+at /);
  expect(run.stdout, 'nothing on stdout').to.equal('');
}

describe('tollgate CLI: errors are one line, exit 2 for what the user can fix', function () {
  this.timeout(60_000);
  let dir: string;
  /** A config whose SQLite database exists (a key was created in it). */
  let good: string;
  const file = (name: string, text: string) => {
    const path = join(dir, name);
    writeFileSync(path, text);
    return path;
  };

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'tollgate-cli-errors-'));
    good = file('good.yaml', 'storage: { url: "sqlite:./data/tollgate.db" }\n');
    const created = await runCli(['keys', 'create', '--config', good]);
    expect(created.code, created.stderr).to.equal(0);
  });

  it('--version prints the version of package.json', async () => {
    const { version } = JSON.parse(readFileSync(join(PROJECT_ROOT, 'package.json'), 'utf8'));
    for (const flag of ['--version', '-V']) {
      const run = await runCli([flag]);
      expect(run.code).to.equal(0);
      expect(run.stdout).to.equal(`${version}\n`);
    }
  });

  describe('options', () => {
    const cases: [string, string[], RegExp][] = [
      [
        'an unreadable --from',
        ['usage', '--from', 'yesterday'],
        /^tollgate: --from: cannot read the time "yesterday" \(use 24h or 7d ago, an ISO date or epoch ms\)$/,
      ],
      ['a day that does not exist', ['usage', '--from', '2026-02-30'], /--from: "2026-02-30" is not a date/],
      [
        'a time past the end of Date',
        ['usage', '--to', '99999999999999999999'],
        /--to: "99999999999999999999" is out of range/,
      ],
      ['a relative time before 1970', ['usage', '--from', '100000000d'], /--from: "100000000d" is out of range/],
      [
        'an inverted range',
        ['usage', '--from', '2025-01-02', '--to', '2025-01-01'],
        /--from 2025-01-02T00:00:00\.000Z must be before --to 2025-01-01T00:00:00\.000Z/,
      ],
      ['an empty range', ['usage', '--from', '2025-01-01', '--to', '2025-01-01'], /must be before --to/],
      [
        'an inverted range on reprice',
        ['usage', 'reprice', '--from', '2025-01-02', '--to', '2025-01-01'],
        /must be before --to/,
      ],
      ['a --filter without =', ['usage', '--filter', 'agent'], /--filter takes key=value, got "agent"/],
      ['a --filter with an empty key', ['usage', '--filter', '=x'], /--filter takes key=value, got "=x"/],
      [
        'a status filter that is no status',
        ['usage', '--filter', 'status=ok'],
        /status filter must be an HTTP status code, got "ok"/,
      ],
      ['a dimension twice', ['usage', '--group-by', 'model,model'], /dimension model appears twice/],
      [
        'more dimensions than the API takes',
        ['usage', '--group-by', 'agent,model,provider,key_id'],
        /--group-by takes at most 3 dimensions/,
      ],
      ['a limit the API would refuse', ['usage', '--limit', '1001'], /expected a whole number from 1 to 1,000/],
      ['--json with --csv', ['usage', '--json', '--csv'], /--json and --csv: choose one/],
      ['an unknown option', ['usage', '--colour'], /unknown option '--colour'/],
      ['a missing option value', ['usage', '--from'], /option '--from <time>' argument missing/],
      ['an unknown command', ['usgae'], /unknown command 'usgae'/],
      ['a missing argument', ['keys', 'revoke'], /missing required argument 'id'/],
      ['an unknown key id', ['keys', 'revoke', 'key_nope'], /no active key with id key_nope/],
      ['an unknown workspace', ['keys', 'create', '--workspace', 'nope'], /Unknown workspace "nope"/],
      ['a worker count below one', ['start', '--workers', '-3'], /workers must be a whole number from 1 to 256/],
    ];
    for (const [what, args, pattern] of cases) {
      it(`refuses ${what}`, async () => expectUserError(await runCli([...args, '--config', good]), pattern));
    }

    it('refuses negative and absurd demo numbers at once instead of spinning', async () => {
      for (const [args, pattern] of [
        [
          ['-n', '-5'],
          /option '-n, --requests <n>' argument '-5' is invalid\. expected a whole number from 1 to 1,000,000/,
        ],
        [['-n', '1e9'], /argument '1e9' is invalid/],
        [['-n', '2.5'], /argument '2.5' is invalid/],
        [['--days', '0'], /option '--days <n>' argument '0' is invalid\. expected a whole number from 1 to 365/],
        [['--port', '70000'], /option '--port <port>' argument '70000' is invalid/],
        [['--admin-port', 'http'], /option '--admin-port <port>' argument 'http' is invalid/],
      ] as [string[], RegExp][]) {
        const run = await runCli(['demo', ...args], { timeoutMs: 10_000 });
        expect(run.signal, `${args.join(' ')} still ran after 10 s`).to.equal(null);
        expectUserError(run, pattern);
      }
    });
  });

  describe('the config file', () => {
    it('refuses a missing file, naming it', async () => {
      expectUserError(
        await runCli(['usage', '--config', join(dir, 'nope.yaml')]),
        new RegExp(`cannot read config file ${join(dir, 'nope.yaml')}: ENOENT`),
      );
    });

    it('refuses a folder given as the file', async () => {
      expectUserError(await runCli(['keys', 'list', '--config', dir]), /cannot read config file .*EISDIR/);
    });

    it('refuses bad YAML on one line that names the line', async () => {
      const bad = file('bad.yaml', 'server:\n  port: 8080\nstorage: [\n');
      expectUserError(
        await runCli(['check-config', '--config', bad]),
        /bad\.yaml: invalid YAML: .* at line \d+, column \d+$/,
      );
      expectUserError(await runCli(['start', '--config', bad]), /invalid YAML/);
    });

    it('lists every invalid key on the one line', async () => {
      const invalid = file('invalid.yaml', 'server: { port: 99999, host: 3 }\nfoo: 1\n');
      expectUserError(
        await runCli(['check-config', '--config', invalid]),
        /invalid\.yaml is invalid: .*server\.host: .*; .*server\.port: .*; \(top level\): unknown key "foo"$/,
      );
    });

    it('names an unset environment variable', async () => {
      const env = file('env.yaml', 'storage: { url: "${TOLLGATE_TEST_UNSET_VAR}" }\n');
      expectUserError(
        await runCli(['usage', '--config', env], { env: { TOLLGATE_TEST_UNSET_VAR: '' } }),
        /storage\.url: environment variable TOLLGATE_TEST_UNSET_VAR is not set/,
      );
    });

    it('names the config file when its price file is missing', async () => {
      const prices = file(
        'prices.yaml',
        'storage: { url: "sqlite:./data/tollgate.db" }\npricing: { litellm_file: ./no-prices.json }\n',
      );
      const missing = new RegExp(`ENOENT: no such file or directory, open '${join(dir, 'no-prices.json')}'$`);
      expectUserError(await runCli(['check-config', '--config', prices]), new RegExp(`^tollgate: ${prices}: `));
      expectUserError(await runCli(['check-config', '--config', prices]), missing);
      expectUserError(
        await runCli(['usage', 'reprice', '--config', prices]),
        new RegExp(`^tollgate: ${prices}: pricing: `),
      );
    });

    it('start refuses what only start meets: workers without a shared store, an upload folder it cannot create', async () => {
      const env = { GATEWAY_KEY: 'tg_cli_errors_test_key_00000000001' };
      const memory = file('memory.yaml', 'server: { port: 0, workers: 2 }\nstorage: { url: "sqlite::memory:" }\n');
      expectUserError(
        await runCli(['start', '--config', memory], { env }),
        /^tollgate: cannot start: server\.workers > 1 needs a store the workers share/,
      );
      const spool = file(
        'spool.yaml',
        `server: { host: 127.0.0.1, port: 0, upload_spool_dir: ${good}/uploads }\nstorage: { url: "sqlite:./spool-data/tollgate.db" }\n`,
      );
      const run = await runCli(['start', '--config', spool], { env });
      expect(run.code, run.stderr).to.equal(2);
      expect(run.stderr).to.equal(
        `tollgate: cannot start: server.upload_spool_dir: cannot create ${good}/uploads: ENOTDIR: not a directory, mkdir '${good}/uploads'\n`,
      );
    });

    it('refuses an unknown storage scheme in check-config, and start agrees', async () => {
      const mysql = file('mysql.yaml', 'storage: { url: "mysql://root@127.0.0.1/tollgate" }\n');
      const pattern =
        /mysql\.yaml is invalid: storage\.url: unsupported storage URL scheme "mysql": use sqlite:<path> or postgres:\/\/\.\.\.$/;
      expectUserError(await runCli(['check-config', '--config', mysql]), pattern);
      expectUserError(await runCli(['start', '--config', mysql]), pattern);
      expectUserError(await runCli(['usage', '--config', mysql]), pattern);
    });
  });

  describe('the database', () => {
    it('read-only commands never create a database: a mistyped SQLite path is an error naming it', async () => {
      const typo = file('typo.yaml', 'storage: { url: "sqlite:./dtaa/tollgate.db" }\n');
      const path = join(dir, 'dtaa', 'tollgate.db');
      for (const args of [
        ['keys', 'list'],
        ['keys', 'revoke', 'key_x'],
        ['usage'],
        ['usage', '--json'],
        ['usage', 'reprice'],
      ]) {
        expectUserError(
          await runCli([...args, '--config', typo]),
          new RegExp(
            `^tollgate: no database at ${path} \\(storage\\.url in ${join(dir, 'typo.yaml')}\\): check the path`,
          ),
        );
      }
      expect(existsSync(join(dir, 'dtaa')), 'neither the file nor its folder was created').to.equal(false);
    });

    it('a file that is no Tollgate database is not turned into one', async () => {
      const empty = file('empty.db', '');
      const config = file('empty-db.yaml', `storage: { url: "sqlite:${empty}" }\n`);
      expectUserError(await runCli(['keys', 'list', '--config', config]), new RegExp(`no Tollgate tables in ${empty}`));
      expect(readFileSync(empty).length, 'still empty').to.equal(0);
    });

    it('an unreachable PostgreSQL is one line naming it, without its password', async () => {
      const config = file('pg-down.yaml', 'storage: { url: "postgres://tollgate:hunter2@127.0.0.1:1/tollgate" }\n');
      const run = await runCli(['usage', '--config', config]);
      expectUserError(
        run,
        /^tollgate: cannot open the database postgres:\/\/tollgate:\*\*\*@127\.0\.0\.1:1\/tollgate: connect ECONNREFUSED 127\.0\.0\.1:1$/,
      );
      expect(run.stderr).to.not.include('hunter2');
      const start = await runCli(['start', '--config', config], {
        env: { GATEWAY_KEY: 'tg_cli_errors_test_key_00000000001' },
      });
      expectUserError(start, /^tollgate: cannot start: connect ECONNREFUSED 127\.0\.0\.1:1$/);
    });

    describe('PostgreSQL (DATABASE_URL)', () => {
      const schema = `tollgate_cli_${process.pid}_${Date.now().toString(36)}`;
      const schemaExists = async (name: string): Promise<boolean> => {
        const c = new Client({ connectionString: PG_URL });
        await c.connect();
        try {
          return (
            (await c.query('SELECT 1 FROM information_schema.schemata WHERE schema_name = $1', [name])).rowCount === 1
          );
        } finally {
          await c.end();
        }
      };
      before(async function () {
        await requirePostgres(this, 'the CLI on PostgreSQL');
      });
      after(async () => {
        if (!PG_URL) return;
        const c = new Client({ connectionString: PG_URL });
        await c.connect();
        await c.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
        await c.end();
      });

      it('a mistyped schema is an error, and is not created', async () => {
        const config = file('pg-typo.yaml', `storage: { url: "${PG_URL}", schema: ${schema}_typo }\n`);
        expectUserError(
          await runCli(['keys', 'list', '--config', config]),
          new RegExp(`no Tollgate tables in .* \\(schema ${schema}_typo\\) .*check storage\\.url and storage\\.schema`),
        );
        expect(await schemaExists(`${schema}_typo`)).to.equal(false);
      });

      it('a database that does not exist is one line', async () => {
        const url = new URL(PG_URL as string);
        url.pathname = `/${schema}_nodb`;
        const config = file('pg-nodb.yaml', `storage: { url: "${url}" }\n`);
        expectUserError(
          await runCli(['keys', 'list', '--config', config]),
          new RegExp(`cannot open the database .*: database "${schema}_nodb" does not exist$`),
        );
      });

      it('keys create makes the schema; keys list reads it', async () => {
        const config = file('pg.yaml', `storage: { url: "${PG_URL}", schema: ${schema} }\n`);
        const created = await runCli(['keys', 'create', '--label', 'pg', '--json', '--config', config]);
        expect(created.code, created.stderr).to.equal(0);
        const list = await runCli(['keys', 'list', '--json', '--config', config]);
        expect(list.code, list.stderr).to.equal(0);
        expect(JSON.parse(list.stdout).map((k: any) => k.id)).to.deep.equal([JSON.parse(created.stdout).id]);
      });
    });
  });

  describe('ports', () => {
    let taken: Server;
    let port: number;
    before(async () => {
      taken = createServer();
      await new Promise<void>((r) => taken.listen(0, '127.0.0.1', r));
      port = (taken.address() as { port: number }).port;
    });
    after(() => new Promise<void>((r) => taken.close(() => r())));

    it('start on a port in use: one line naming the port, exit 2', async () => {
      const config = file(
        'port.yaml',
        `server: { host: 127.0.0.1, port: ${port} }\nstorage: { url: "sqlite:./port-data/tollgate.db" }\nworkspaces: [{ id: default, keys: [{ id: k, key: "\${GATEWAY_KEY}" }] }]\n`,
      );
      const run = await runCli(['start', '--config', config], {
        env: { GATEWAY_KEY: 'tg_cli_errors_test_key_00000000001' },
      });
      const shown = `exit ${run.code}, stderr:\n${run.stderr}`;
      expect(run.code, shown).to.equal(2);
      expect(run.stderr.trimEnd().split('\n'), shown).to.deep.equal([
        `tollgate: cannot start: port ${port} is in use (127.0.0.1:${port}): stop what listens there or choose another port`,
      ]);
    });

    it('the same with several workers: one line, not one per worker', async () => {
      const config = file(
        'port-workers.yaml',
        `server: { host: 127.0.0.1, port: ${port}, workers: 3 }\nstorage: { url: "sqlite:./port-workers/tollgate.db" }\nworkspaces: [{ id: default, keys: [{ id: k, key: "\${GATEWAY_KEY}" }] }]\n`,
      );
      const run = await runCli(['start', '--config', config], {
        env: { GATEWAY_KEY: 'tg_cli_errors_test_key_00000000001' },
      });
      const shown = `exit ${run.code}, stderr:\n${run.stderr}`;
      expect(run.code, shown).to.equal(2);
      expect(run.stderr.trimEnd().split('\n'), shown).to.deep.equal([
        `tollgate: cannot start: port ${port} is in use (127.0.0.1:${port}): stop what listens there or choose another port`,
      ]);
    });

    it('demo on an admin port in use: the same', async () => {
      const run = await runCli(['demo', '-n', '5', '--admin-port', String(port)]);
      const shown = `exit ${run.code}, stderr:\n${run.stderr}`;
      expect(run.code, shown).to.equal(2);
      expect(run.stderr, shown).to.match(
        new RegExp(
          `\\ntollgate: port ${port} is in use \\(127\\.0\\.0\\.1:${port}\\): stop what listens there or choose another port\\n$`,
        ),
      );
      expect(run.stderr, shown).to.not.match(/\n\s+at /);
    });
  });

  describe('unexpected errors', () => {
    let damaged: string;
    before(async () => {
      // A Tollgate database whose keys table is gone: not a mistake in the command, so not a user error.
      damaged = file('damaged.yaml', 'storage: { url: "sqlite:./damaged/tollgate.db" }\n');
      expect((await runCli(['keys', 'create', '--config', damaged])).code).to.equal(0);
      const db = new Database(join(dir, 'damaged', 'tollgate.db'));
      db.exec('DROP TABLE keys');
      db.close();
    });

    it('exit 1 with one line that says how to see more', async () => {
      const run = await runCli(['keys', 'list', '--config', damaged]);
      expect(run.code, run.stderr).to.equal(1);
      expect(run.stderr).to.equal(
        'tollgate: internal error: no such table: keys (TOLLGATE_DEBUG=1 prints the stack)\n',
      );
    });

    it('TOLLGATE_DEBUG=1 adds the stack', async () => {
      const run = await runCli(['keys', 'list', '--config', damaged], { env: { TOLLGATE_DEBUG: '1' } });
      expect(run.code, run.stderr).to.equal(1);
      expect(run.stderr).to.match(/^tollgate: no such table: keys\nSqliteError: no such table: keys\n\s+at /);
    });
  });
});
