import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join, posix } from 'node:path';
import { expect } from 'chai';
import {
  DockerfileParser,
  type Env,
  type Instruction,
  type JSONInstruction,
  type ModifiableInstruction,
} from 'dockerfile-ast';
import { validate, ValidationSeverity, type ValidatorSettings } from 'dockerfile-utils';
import { parse as parseYaml } from 'yaml';
import { parseConfig } from '../../config/load';
import { parseStorageUrl } from '../../storage/open';
import { PROJECT_ROOT } from '../helpers/fixtures';

/**
 * The container recipe (Dockerfile, .dockerignore, docker-compose.yml), read the way Docker reads it
 * (dockerfile-ast, the parser of the VS Code Docker language server) and linted with dockerfile-utils. Docker
 * itself may not be on the machine that runs the tests, so the image is not built here: these checks hold the
 * recipe to the gateway it packages (its ports, data folder, config variables and the files it reads at run time).
 */
const read = (name: string) => readFileSync(join(PROJECT_ROOT, name), 'utf8');
const APP = '/app';

interface Stage {
  name: string | null;
  image: string;
  instructions: Instruction[];
}

function stages(text: string): Stage[] {
  const file = DockerfileParser.parse(text);
  const out: Stage[] = [];
  for (const instruction of file.getInstructions()) {
    if (instruction.getKeyword() === 'FROM') {
      const from = file.getFROMs().find((f) => f.getRange().start.line === instruction.getRange().start.line)!;
      out.push({ name: from.getBuildStage(), image: from.getImage() ?? '', instructions: [] });
    } else if (out.length) out[out.length - 1].instructions.push(instruction);
  }
  return out;
}

const of = (stage: Stage, keyword: string) => stage.instructions.filter((i) => i.getKeyword() === keyword);
/** Arguments, without the --flags. */
const words = (i: Instruction) => i.getArguments().map((a) => a.getValue());
const flags = (i: Instruction) =>
  (i as ModifiableInstruction).getFlags().map((f) => `--${f.getName()}=${f.getValue()}`);
const json = (i: Instruction) => (i as JSONInstruction).getJSONStrings().map((s) => s.getJSONValue());

/** The environment a stage's ENV instructions set. */
function envOf(stage: Stage): Record<string, string> {
  const env: Record<string, string> = {};
  for (const i of of(stage, 'ENV')) for (const p of (i as Env).getProperties()) env[p.getName()] = p.getValue() ?? '';
  return env;
}

/** A .dockerignore pattern (relative to the context root; `*` within one path part) against a path and its parents. */
function matches(pattern: string, path: string): boolean {
  const re = new RegExp(`^${pattern.replace(/[.+?^$()|[\]\\{}]/g, '\\$&').replace(/\*/g, '[^/]*')}(/|$)`);
  return re.test(path);
}

describe('container recipe', () => {
  const dockerfile = read('Dockerfile');
  const all = stages(dockerfile);
  const build = all[0];
  const runtime = all[all.length - 1];
  const imageEnv = envOf(runtime);
  /** gateway.config.yaml as the image runs it: its own environment, the file at /app/gateway.config.yaml. */
  const config = parseConfig(
    read('gateway.config.yaml'),
    { ...imageEnv, TOLLGATE_ADMIN_TOKEN: 'an-admin-token-of-at-least-24-characters' },
    'gateway.config.yaml',
  );

  it('Dockerfile: no problem found by the linter (dockerfile-utils, every check an error)', () => {
    const everything: ValidatorSettings = {
      deprecatedMaintainer: ValidationSeverity.ERROR,
      directiveCasing: ValidationSeverity.ERROR,
      emptyContinuationLine: ValidationSeverity.ERROR,
      instructionCasing: ValidationSeverity.ERROR,
      instructionCmdMultiple: ValidationSeverity.ERROR,
      instructionEntrypointMultiple: ValidationSeverity.ERROR,
      instructionHealthcheckMultiple: ValidationSeverity.ERROR,
      instructionJSONInSingleQuotes: ValidationSeverity.ERROR,
      instructionWorkdirRelative: ValidationSeverity.ERROR,
    };
    expect(validate(dockerfile, everything).map((d) => `line ${d.range.start.line + 1}: ${d.message}`)).to.deep.equal(
      [],
    );
    // The linter can fail: the same file with a relative WORKDIR and a second CMD.
    expect(validate(`${dockerfile}\nWORKDIR app\nCMD ["start"]\n`, everything)).to.have.length.greaterThan(1);
  });

  it('Dockerfile: two stages on Node 24 slim (Debian bookworm), dev dependencies in the build stage only', () => {
    expect(all.map((s) => [s.name, s.image])).to.deep.equal([
      ['build', 'node:24-bookworm-slim'],
      ['runtime', 'node:24-bookworm-slim'],
    ]);
    const buildRuns = of(build, 'RUN').map((i) => words(i).join(' '));
    expect(buildRuns.some((r) => r.includes('npm ci'))).to.equal(true);
    expect(buildRuns.some((r) => r.includes('npm run build') && r.includes('npm prune --omit=dev'))).to.equal(true);
    // The runtime stage installs nothing: it takes the pruned node_modules from the build stage.
    expect(
      of(runtime, 'RUN')
        .map((i) => words(i).join(' '))
        .filter((r) => /\bnpm\b|apt-get/.test(r)),
    ).to.deep.equal([]);
    expect(of(runtime, 'COPY').map((i) => [...flags(i), ...words(i)])).to.deep.include([
      '--from=build',
      '/app/node_modules',
      './node_modules',
    ]);
  });

  it('Dockerfile: the runtime stage gets every file the gateway reads at run time', () => {
    const copied = of(runtime, 'COPY').flatMap((i) => {
      expect(flags(i), 'every runtime COPY comes from the build stage').to.deep.equal(['--from=build']);
      const rest = words(i);
      const target = rest.pop()!;
      return rest.map((source) => ({
        source,
        target: posix.resolve(
          APP,
          target.endsWith('/') || rest.length > 1 ? posix.join(target, posix.basename(source)) : target,
        ),
      }));
    });
    // Copied to where it was: the relative paths the code uses (admin/dashboard/serve.ts) hold in the image.
    for (const { source, target } of copied)
      expect(target, source).to.equal(source.endsWith('node_modules') ? '/app/node_modules' : source);
    const inImage = copied.map((c) => posix.relative(APP, c.target));
    expect(inImage).to.include.members(['package.json', 'node_modules', 'dist', 'gateway.config.yaml']);
    // The dashboard's hand-written files (its scripts are compiled into dist).
    const web = readdirSync(join(PROJECT_ROOT, 'admin/dashboard/web')).filter((f) => /\.(html|css|png|svg)$/.test(f));
    expect(inImage.filter((p) => p.startsWith('admin/')).sort()).to.deep.equal(
      web.map((f) => `admin/dashboard/web/${f}`).sort(),
    );
    // Each source is in the build context: not in .dockerignore, and there once the build ran (dist, node_modules).
    for (const p of inImage) expect(existsSync(join(PROJECT_ROOT, p)), p).to.equal(true);
    const [node, ...nodeArgs] = json(of(runtime, 'ENTRYPOINT')[0]);
    expect(node).to.equal('node');
    const script = nodeArgs.find((f) => f.endsWith('.js'))!;
    expect(existsSync(join(PROJECT_ROOT, script)), script).to.equal(true);
    expect(json(of(runtime, 'CMD')[0])).to.deep.equal(['start']);
    // The flags of npm start (which execs node, so that a signal to its PID reaches the gateway).
    const start = (JSON.parse(read('package.json')) as { scripts: Record<string, string> }).scripts.start;
    expect(start).to.equal(`exec ${[node, ...nodeArgs].join(' ')} start`);
  });

  it('Dockerfile: runs as an unprivileged user, with the data folder as a volume it owns', () => {
    const users = of(runtime, 'USER').map((i) => words(i)[0]);
    expect(users).to.have.length(1);
    expect(users[0]).to.not.match(/^(root|0)(:|$)/);
    const userLine = of(runtime, 'USER')[0].getRange().start.line;
    expect(of(runtime, 'ENTRYPOINT')[0].getRange().start.line).to.be.greaterThan(userLine);
    const volumes = of(runtime, 'VOLUME').flatMap((i) => json(i));
    expect(volumes).to.deep.equal(['/app/data']);
    // The SQLite database and the recorder's spill file of the default config land in it.
    const sqlite = parseStorageUrl(config.storage.url);
    expect(sqlite.kind).to.equal('sqlite');
    expect(posix.resolve(APP, (sqlite as { path: string }).path)).to.equal('/app/data/tollgate.db');
    const recorder = config.plugins.find((p) => p.use === 'usage-recorder')!;
    expect(posix.resolve(APP, (recorder.options as { spill_path: string }).spill_path)).to.match(/^\/app\/data\//);
    expect(of(runtime, 'RUN').map((i) => words(i).join(' '))).to.deep.include(
      'mkdir -p /app/data && chown node:node /app/data',
    );
  });

  it('Dockerfile: EXPOSEs the proxy and admin ports of gateway.config.yaml, listening on every interface', () => {
    const exposed = of(runtime, 'EXPOSE')
      .flatMap((i) => words(i))
      .map(Number);
    expect(exposed).to.deep.equal([config.server.port, config.admin.port]);
    expect(config.server.port).to.equal(8080);
    expect(config.admin.port).to.equal(8081);
    // Inside a container, 127.0.0.1 (the default outside one) would be out of reach of published ports.
    expect(config.server.host).to.equal('0.0.0.0');
    expect(config.admin.host).to.equal('0.0.0.0');
  });

  it('Dockerfile: HEALTHCHECK runs tollgate healthcheck, which reads the port from the config the gateway runs with', () => {
    const [check] = of(runtime, 'HEALTHCHECK');
    expect(flags(check)).to.deep.equal(['--interval=30s', '--timeout=5s', '--start-period=20s', '--retries=3']);
    const [sub, ...exec] = words(check);
    expect(sub).to.equal('CMD');
    const command = JSON.parse(exec.join(' ')) as string[];
    const [entry] = of(runtime, 'ENTRYPOINT');
    expect(command).to.deep.equal([...(JSON.parse(words(entry).join(' ')) as string[]), 'healthcheck']);
  });

  it('.dockerignore keeps local state, secrets and tests out of the context, and the sources in', () => {
    const ignored = read('.dockerignore')
      .split('\n')
      .map((l) => l.trim())
      .filter((l) => l && !l.startsWith('#'));
    expect(ignored).to.include.members(['.git', 'node_modules', 'dist', 'data', '.env', '.env.*', '*.db', 'test']);
    const tsconfig = JSON.parse(read('tsconfig.json')) as { include: string[] };
    // tests, benchmarks and the maintainers' scripts (the price-catalog build) stay out of the image
    const sources = tsconfig.include.filter((d) => !['test', 'bench', 'scripts'].includes(d));
    for (const needed of [
      'package.json',
      'package-lock.json',
      'tsconfig.json',
      'gateway.config.yaml',
      'admin/dashboard/web',
      ...sources,
    ]) {
      expect(
        ignored.filter((pattern) => matches(pattern, needed)),
        needed,
      ).to.deep.equal([]);
    }
  });

  describe('docker-compose.yml', () => {
    const compose = parseYaml(read('docker-compose.yml')) as any;
    /** Compose's own interpolation of ${VAR:-default} and ${VAR:?error}, with `given` as the shell environment. */
    const interpolate = (value: string, given: Record<string, string>) =>
      value.replace(/\$\{(\w+)(?::([-?])([^}]*))?\}/g, (_m, name: string, op?: string, rest?: string) => {
        if (given[name]) return given[name];
        if (op === '?') throw new Error(`compose refuses to start without ${name}: ${rest}`);
        return op === '-' ? rest! : '';
      });
    const gatewayEnv = (given: Record<string, string>) =>
      Object.fromEntries(
        Object.entries(compose.services.gateway.environment as Record<string, string>).map(([k, v]) => [
          k,
          interpolate(String(v), given),
        ]),
      );

    it('the gateway, PostgreSQL and Redis, the gateway started once both are healthy', () => {
      expect(Object.keys(compose.services).sort()).to.deep.equal(['gateway', 'postgres', 'redis']);
      expect(compose.services.gateway.build).to.equal('.');
      expect(compose.services.gateway.depends_on).to.deep.equal({
        postgres: { condition: 'service_healthy' },
        redis: { condition: 'service_healthy' },
      });
      expect(compose.services.postgres.healthcheck.test.join(' ')).to.include('pg_isready');
      expect(compose.services.redis.healthcheck.test).to.deep.equal(['CMD', 'redis-cli', 'ping']);
      expect(compose.services.gateway.volumes).to.deep.equal(['tollgate-data:/app/data']);
      // Longer than the gateway's own drain on SIGTERM.
      expect(Number(/^(\d+)s$/.exec(compose.services.gateway.stop_grace_period)![1]) * 1000).to.be.greaterThan(
        config.server.shutdown_grace_ms,
      );
    });

    it('configures the gateway through the variables gateway.config.yaml reads: PostgreSQL store, Redis limit store', () => {
      expect(() => gatewayEnv({}), 'no admin token').to.throw(/TOLLGATE_ADMIN_TOKEN/);
      const env = gatewayEnv({ TOLLGATE_ADMIN_TOKEN: 'an-admin-token-of-at-least-24-characters' });
      const referenced = new Set([...read('gateway.config.yaml').matchAll(/\$\{(\w+)/g)].map((m) => m[1]));
      for (const name of Object.keys(env))
        expect(referenced.has(name), `${name} is read by gateway.config.yaml`).to.equal(true);
      const running = parseConfig(read('gateway.config.yaml'), { ...imageEnv, ...env }, 'gateway.config.yaml');
      const store = new URL(running.storage.url);
      expect([store.protocol, store.hostname, store.port, store.pathname]).to.deep.equal([
        'postgres:',
        'postgres',
        '5432',
        '/tollgate',
      ]);
      expect(store.username).to.equal(compose.services.postgres.environment.POSTGRES_USER);
      expect(decodeURIComponent(store.password)).to.equal(
        interpolate(compose.services.postgres.environment.POSTGRES_PASSWORD, {}),
      );
      expect(running.limit_store.redis_url).to.equal('redis://redis:6379');
      expect(running.admin.token).to.equal('an-admin-token-of-at-least-24-characters');
      // Published: the proxy port, and the admin port on the host's loopback only.
      expect(compose.services.gateway.ports).to.deep.equal([
        `${running.server.port}:${running.server.port}`,
        `127.0.0.1:${running.admin.port}:${running.admin.port}`,
      ]);
    });
  });
});
