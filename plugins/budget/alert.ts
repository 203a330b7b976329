/** True when spent reached share x limit (share in thousandths, as configured to at most 3 decimals). */
export function alertReached(spentPico: bigint, limitPico: bigint, share: number): boolean {
  return spentPico * 1000n >= limitPico * BigInt(Math.round(share * 1000));
}
