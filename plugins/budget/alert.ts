/** True when spent reached alertAt x limit (alertAt in thousandths, as configured to at most 3 decimals). */
export function alertReached(spentPico: bigint, limitPico: bigint, alertAt: number): boolean {
  return spentPico * 1000n >= limitPico * BigInt(Math.round(alertAt * 1000));
}
