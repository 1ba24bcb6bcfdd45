/**
 * A reference head may advance at most two blocks per block interval since the last adopted reference, plus a slack.
 * Anything further is implausible (a peer on another chain, or a peer replaying a fake chain, racing ahead) and is
 * ignored, so it cannot make every light node look behind. Going down (a reorg, a peer resyncing) is never gated.
 */
export const BLOCKS_PER_INTERVAL_ALLOWED = 2;

export interface VelocityGateParams {
  blockTimeMs: number;
  slackBlocks: number;
}

export function maxPlausibleHead(
  previous: { number: number; seenAt: number },
  now: number,
  params: VelocityGateParams,
): number {
  const elapsed = Math.max(0, now - previous.seenAt);
  return (
    previous.number +
    Math.floor((elapsed * BLOCKS_PER_INTERVAL_ALLOWED) / params.blockTimeMs) +
    params.slackBlocks
  );
}

export function isPlausibleAdvance(
  previous: { number: number; seenAt: number } | undefined,
  candidate: number,
  now: number,
  params: VelocityGateParams,
): boolean {
  return previous === undefined || candidate <= maxPlausibleHead(previous, now, params);
}
