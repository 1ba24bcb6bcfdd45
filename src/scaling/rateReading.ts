/** A pool's request rate as one source read it, or why it could not. */
export type RateReading =
  | { ok: true; requestsPerSecond: number }
  | {
      ok: false;
      reason: string;
      /** True for a failure worth reporting (metric, warning); false while a counter rate is still warming up. */
      failed: boolean;
    };

export function rateOf(requestsPerSecond: number): RateReading {
  return { ok: true, requestsPerSecond };
}

export function rateFailed(reason: string): RateReading {
  return { ok: false, reason, failed: true };
}

/** Reads the request rate of one network. Never throws: a failure is a reading. */
export interface RateSource {
  /** Source kind for metrics and reasons: "gateway", "gateway-scrape", "prometheus". */
  readonly kind: string;
  read(network: string): Promise<RateReading>;
}
