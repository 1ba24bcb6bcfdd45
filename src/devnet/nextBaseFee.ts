/**
 * EIP-1559 base fee of the block after `parent` (as execution clients compute it, elasticity 2, denominator 8).
 * Needed after evm_revert: anvil rewinds blocks and state but not its fee tracker, so the driver sets the next base
 * fee itself to keep the reverted node's next block identical to the other nodes'.
 */
export function nextBaseFee(parent: { baseFeePerGas: bigint; gasUsed: bigint; gasLimit: bigint }): bigint {
  const target = parent.gasLimit / 2n;
  const base = parent.baseFeePerGas;
  if (target === 0n || parent.gasUsed === target) return base;
  if (parent.gasUsed > target) {
    const delta = (base * (parent.gasUsed - target)) / target / 8n;
    return base + (delta > 1n ? delta : 1n);
  }
  return base - (base * (target - parent.gasUsed)) / target / 8n;
}
