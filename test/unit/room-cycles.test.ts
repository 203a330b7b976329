import { expect } from 'chai';
import { readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { PROJECT_ROOT } from '../helpers/fixtures';
import { relativeImportsOf, sourcesUnder } from '../helpers/imports';

/** The folders tests, benchmarks and scripts live in: they may import any room, and no room imports them. */
const OUTSIDE = new Set(['test', 'bench', 'scripts']);

/** Room-to-room imports allowed despite closing a cycle, each with its reason. None today. */
const ALLOWED_CYCLES: readonly string[] = [];

/** The top-level source folders ("rooms"), as the build compiles them (tsconfig.json `include`). */
function rooms(): string[] {
  const { include } = JSON.parse(readFileSync(join(PROJECT_ROOT, 'tsconfig.json'), 'utf8')) as { include: string[] };
  return include.filter((room) => !OUTSIDE.has(room) && statSync(join(PROJECT_ROOT, room)).isDirectory());
}

/** Which rooms each room imports, with one example import per pair. */
function roomGraph(): Map<string, Map<string, string>> {
  const graph = new Map<string, Map<string, string>>();
  for (const room of rooms()) {
    const edges = new Map<string, string>();
    for (const file of sourcesUnder(join(PROJECT_ROOT, room))) {
      for (const { spec, target } of relativeImportsOf(file)) {
        const to = target.split('/')[0];
        if (to !== room && !edges.has(to)) edges.set(to, `${relative(PROJECT_ROOT, file)} imports ${spec}`);
      }
    }
    graph.set(room, edges);
  }
  return graph;
}

/** Every import between rooms that lies on a cycle: from a room to one that reaches back to it. */
function cycleEdges(graph: Map<string, Map<string, string>>): string[] {
  const reaches = (from: string, to: string): boolean => {
    const seen = new Set<string>();
    const stack = [from];
    while (stack.length > 0) {
      const room = stack.pop()!;
      if (room === to) return true;
      if (seen.has(room)) continue;
      seen.add(room);
      stack.push(...(graph.get(room)?.keys() ?? []));
    }
    return false;
  };
  const found: string[] = [];
  for (const [room, edges] of graph) {
    for (const [to, example] of edges) {
      if (reaches(to, room) && !ALLOWED_CYCLES.includes(`${room} -> ${to}`))
        found.push(`${room} -> ${to} (${example})`);
    }
  }
  return found;
}

describe('the rooms import each other one way only', () => {
  const graph = roomGraph();

  it('sees the rooms and the imports between them', () => {
    expect([...graph.keys()]).to.include.members([
      'api',
      'core',
      'intake',
      'contracts',
      'plugin-kit',
      'services',
      'runtime',
    ]);
    expect([...graph.get('plugins')!.keys()]).to.deep.equal(['api']);
  });

  it('no two rooms import each other, directly or through others', () => {
    expect(cycleEdges(graph)).to.deep.equal([]);
  });

  it('finds a cycle when there is one', () => {
    const withCycle = new Map(graph);
    withCycle.set('core', new Map([...graph.get('core')!, ['api', 'core/x.ts imports ../api']]));
    expect(cycleEdges(withCycle)).to.include('core -> api (core/x.ts imports ../api)');
  });
});
