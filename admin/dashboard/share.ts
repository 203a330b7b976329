/**
 * A group's share of the total cost as a percentage with two decimals ("12.34"), computed exactly from
 * pico-USD integers and rounded half up once. Empty when the total cost is zero (nothing to share).
 * The page computes the same value in admin/dashboard/web/format.ts: keep the two in step (the browser
 * tests compare the CSV with the table).
 */
export function costSharePct(costPico: bigint, totalPico: bigint): string {
  if (totalPico <= 0n) return '';
  const basisPoints = (costPico * 20_000n + totalPico) / (2n * totalPico);
  const frac = (basisPoints % 100n).toString().padStart(2, '0');
  return `${basisPoints / 100n}.${frac}`;
}
