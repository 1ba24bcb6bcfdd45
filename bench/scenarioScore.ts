/**
 * How bench:scenarios scores routing in a scenario, from the routing changes the fleet made (pure: the bench records
 * the changes and the times, this reads them).
 */

export interface RoutingChange {
  node: string;
  /** ms since the epoch */
  at: number;
  routed: boolean;
}

/** Whether a node was routed at a time, by the last routing change before it (routed until one says otherwise). */
export function routedAt(changes: readonly RoutingChange[], node: string, at: number): boolean {
  let routed = true;
  for (const c of changes) if (c.node === node && c.at <= at) routed = c.routed;
  return routed;
}

/**
 * How long each bad node stayed routed after it turned bad (it left at its first unroute after that), the longest:
 * Infinity when one never left, undefined when the scenario has no bad node. A node out of routing by then (unrouted
 * for another reason, a sync say) and never routed again stayed 0 ms, not "never left". `history` is every change
 * since the bench began, `from` the index of the scenario's first.
 */
export function stayedRoutedMs(
  history: readonly RoutingChange[],
  from: number,
  badAt: ReadonlyMap<string, number>,
  probeMs: number,
): number | undefined {
  const changes = history.slice(from);
  let longest: number | undefined;
  for (const [node, at] of badAt) {
    const after = changes.filter((c) => c.node === node && c.at >= at - probeMs);
    const left = after.find((c) => !c.routed);
    const outAllAlong = !routedAt(history, node, at - probeMs) && !after.some((c) => c.routed);
    const stayed = outAllAlong
      ? 0
      : left === undefined
        ? Number.POSITIVE_INFINITY
        : Math.max(0, left.at - at);
    longest = Math.max(longest ?? 0, stayed);
  }
  return longest;
}

/**
 * Nodes that were not made bad but left routing during the scenario (`changes`: the scenario's own). A node the
 * scenario held (at the lag threshold, say) and healed may be behind when healed, and catching up (on geth, syncing
 * from its peers and saying so) takes it out of routing for a moment, as it should: its unroutes from its heal on
 * (`healedAt`) are its recovery, not a decision against a good node. Every other unroute counts.
 */
export function goodNodesUnrouted(
  changes: readonly RoutingChange[],
  bad: readonly string[],
  healedAt: ReadonlyMap<string, number>,
): number {
  const counted = changes.filter(
    (c) => !c.routed && !bad.includes(c.node) && c.at < (healedAt.get(c.node) ?? Number.POSITIVE_INFINITY),
  );
  return new Set(counted.map((c) => c.node)).size;
}
