// Linux /proc helpers: CPU time and memory of every process in a process group.
// The benchmark starts each server with `setsid`, so its PID is also its PGID and the
// group contains exactly the processes that server spawned.
import { readdirSync, readFileSync } from 'node:fs';

const CLK_TCK = Number(process.env.CLK_TCK || 100);

export function groupStat(pgid) {
  pgid = Number(pgid);
  const out = { pgid, pids: [], cpu_ms: 0, rss_kb: 0, hwm_kb: 0 };
  let ents;
  try {
    ents = readdirSync('/proc');
  } catch {
    return out;
  }
  for (const e of ents) {
    if (e.charCodeAt(0) < 48 || e.charCodeAt(0) > 57) continue;
    let s;
    try {
      s = readFileSync(`/proc/${e}/stat`, 'latin1');
    } catch {
      continue;
    }
    const f = s.slice(s.lastIndexOf(')') + 2).split(' ');
    // f[0]=state f[1]=ppid f[2]=pgrp ... f[11]=utime f[12]=stime (fields 14,15 of stat)
    if (Number(f[2]) !== pgid) continue;
    out.pids.push(Number(e));
    out.cpu_ms += ((Number(f[11]) + Number(f[12])) * 1000) / CLK_TCK;
    try {
      const st = readFileSync(`/proc/${e}/status`, 'latin1');
      const rss = /VmRSS:\s+(\d+)/.exec(st);
      const hwm = /VmHWM:\s+(\d+)/.exec(st);
      if (rss) out.rss_kb += Number(rss[1]);
      if (hwm) out.hwm_kb += Number(hwm[1]);
    } catch {
      /* exited */
    }
  }
  return out;
}

// CPU time the whole machine spent busy (all cores, ms), from the first line of /proc/stat, and the time the
// hypervisor ran other guests on our virtual CPUs while they had work (steal): time this machine did not get.
export function machineCpu() {
  try {
    const f = readFileSync('/proc/stat', 'latin1').split('\n', 1)[0].trim().split(/\s+/).slice(1).map(Number);
    // user nice system idle iowait irq softirq steal
    const busy = f[0] + f[1] + f[2] + f[5] + f[6];
    return {
      busy_ms: (busy * 1000) / CLK_TCK,
      idle_ms: ((f[3] + f[4]) * 1000) / CLK_TCK,
      steal_ms: ((f[7] || 0) * 1000) / CLK_TCK,
    };
  } catch {
    return { busy_ms: 0, idle_ms: 0, steal_ms: 0 };
  }
}

// CLI: node lib/proc.mjs PGID [PGID...] -> one JSON line per group
if (import.meta.url === `file://${process.argv[1]}`) {
  for (const g of process.argv.slice(2)) process.stdout.write(JSON.stringify(groupStat(g)) + '\n');
}
