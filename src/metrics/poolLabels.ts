/**
 * How the controller's name for a pool becomes the labels of its series. One host runs a network once, so its name
 * is the `network` label; a cluster controller runs a network once per namespace and keys it by both (see
 * kubernetes/controller/poolKey.ts), so its series carry the pool's namespace too.
 */
export interface PoolLabels {
  /** Every label name `of` returns. */
  readonly names: readonly string[];
  of(pool: string): Record<string, string>;
}

/** The single-host series: `{network}`. */
export const NETWORK_LABELS: PoolLabels = { names: ["network"], of: (network) => ({ network }) };
