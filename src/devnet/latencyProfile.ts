/**
 * How long a `slow` node takes to answer a state read: a log-normal time, as a light node that fetches state from its
 * peers on demand answers most reads at once and some after seconds. Pure: the random source is a seeded generator.
 */

/** A named latency profile: the median and the 99th percentile of the added delay. */
export interface SlowProfile {
  p50Ms: number;
  p99Ms: number;
}

export const SLOW_PROFILES = {
  /** A light node fetching state from its peers: p50 50 ms, p99 2 s (the default). */
  light: { p50Ms: 50, p99Ms: 2_000 },
  /** A light node with a warm cache: p50 10 ms, p99 200 ms. */
  mild: { p50Ms: 10, p99Ms: 200 },
  /** A light node whose peers are far or loaded: p50 200 ms, p99 5 s. */
  severe: { p50Ms: 200, p99Ms: 5_000 },
} as const satisfies Record<string, SlowProfile>;
export type SlowProfileName = keyof typeof SLOW_PROFILES;
export const SLOW_PROFILE_NAMES = Object.keys(SLOW_PROFILES) as SlowProfileName[];

/** The standard normal quantile of 0.99. */
const Z99 = 2.3263478740408408;
/** A delay never exceeds this multiple of the profile's p99 (the far tail would outlast any client). */
const CAP_OVER_P99 = 5;

/** mulberry32: a small, fast, seedable generator of uniform numbers in [0, 1). */
export function seededRandom(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
}

/**
 * Draws delays in milliseconds from the log-normal distribution with the profile's median and p99 (mu = ln p50,
 * sigma = ln(p99 / p50) / z0.99), capped at 5x the p99.
 */
export function latencySampler(profile: SlowProfile, random: () => number): () => number {
  const mu = Math.log(profile.p50Ms);
  const sigma = Math.log(profile.p99Ms / profile.p50Ms) / Z99;
  const cap = profile.p99Ms * CAP_OVER_P99;
  return () => {
    // Box-Muller; 1 - u keeps the logarithm's argument above 0.
    const u = 1 - random();
    const v = random();
    const z = Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * v);
    return Math.min(cap, Math.exp(mu + sigma * z));
  };
}
