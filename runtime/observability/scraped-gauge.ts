import { Gauge, type Registry } from 'prom-client';

/** A gauge without labels whose value is read from elsewhere when Prometheus scrapes (a count, a queue's depth). */
export function scrapedGauge(registry: Registry, name: string, help: string, read: () => number): void {
  new Gauge({
    name,
    help,
    registers: [registry],
    collect() {
      this.set(read());
    },
  });
}
