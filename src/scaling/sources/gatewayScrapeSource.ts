import { errorMessage } from "../errorMessage.js";
import { rateFailed, rateOf, type RateReading, type RateSource } from "../rateReading.js";
import { CounterRates } from "./counterRates.js";
import { parseExposition } from "./parseExposition.js";

/**
 * The calls the gateway sent to nodes: what the pool serves. Not lightfleet_gateway_requests_total, which also counts
 * what the gateway answers itself (eth_blockNumber, eth_chainId) and what it refuses (rate limits, policy).
 */
export const GATEWAY_REQUESTS_METRIC = "lightfleet_gateway_upstream_requests_total";

export interface GatewayScrapeSourceOptions {
  /** The `/metrics` URLs of the gateway pods now (e.g. from the gateway Service's EndpointSlices). */
  discover: () => Promise<ReadonlyArray<string>> | ReadonlyArray<string>;
  clock: () => number;
  /** Window per network over which the counters become a rate. */
  windowMs: (network: string) => number;
  /** Timeout of one scrape (default 3 s). */
  timeoutMs?: number;
  /** Reads within this long of the last scrape reuse it, so pools share one scrape (default 1 s). */
  minIntervalMs?: number;
  fetch?: typeof fetch;
}

interface Scrape {
  at: number;
  /** url -> network -> requests served (all methods and outcomes). */
  totals: Map<string, Map<string, number>>;
  problems: string[];
}

/**
 * The request rate from the gateway pods' own `/metrics` (`lightfleet_gateway_upstream_requests_total`, the calls
 * nodes serve), summed over pods, nodes and outcomes. Any pod that cannot be scraped makes the reading a failure: a partial sum would look like a
 * drop in traffic and shrink the pool.
 */
export class GatewayScrapeSource implements RateSource {
  readonly kind = "gateway-scrape";
  private readonly rates = new CounterRates();
  private last: Scrape | undefined;
  private inFlight: Promise<Scrape> | undefined;
  /** Networks read so far: every scrape samples them all, so each pool's window fills whatever order they are read in. */
  private readonly networks = new Set<string>();

  constructor(private readonly options: GatewayScrapeSourceOptions) {}

  async read(network: string): Promise<RateReading> {
    this.networks.add(network);
    const scrape = await this.scrape();
    this.recordScrape(scrape, [network]);
    const rate = this.rates.rate(network, scrape.at, this.options.windowMs(network));
    if (scrape.problems.length > 0) return rateFailed(scrape.problems.join("; "));
    if (rate === undefined)
      return { ok: false, failed: false, reason: "warming up (one scrape of the gateways so far)" };
    return rateOf(rate);
  }

  private scrape(): Promise<Scrape> {
    const now = this.options.clock();
    if (this.last && now - this.last.at < (this.options.minIntervalMs ?? 1_000))
      return Promise.resolve(this.last);
    this.inFlight ??= this.scrapeAll().finally(() => (this.inFlight = undefined));
    return this.inFlight;
  }

  private async scrapeAll(): Promise<Scrape> {
    const at = this.options.clock();
    const totals = new Map<string, Map<string, number>>();
    const problems: string[] = [];
    let urls: ReadonlyArray<string> = [];
    try {
      urls = await this.options.discover();
      if (urls.length === 0) problems.push("no gateway pod found");
    } catch (error) {
      problems.push(`gateway discovery failed: ${errorMessage(error)}`);
    }
    await Promise.all(
      urls.map(async (url) => {
        try {
          totals.set(url, await this.scrapeOne(url));
        } catch (error) {
          problems.push(`${url}: ${errorMessage(error)}`);
        }
      }),
    );
    this.last = { at, totals, problems };
    this.recordScrape(this.last, this.networks);
    return this.last;
  }

  private recordScrape(scrape: Scrape, networks: Iterable<string>): void {
    for (const network of networks) {
      for (const [url, byNetwork] of scrape.totals) {
        this.rates.record(network, url, scrape.at, byNetwork.get(network) ?? 0);
      }
    }
  }

  private async scrapeOne(url: string): Promise<Map<string, number>> {
    const response = await (this.options.fetch ?? fetch)(url, {
      headers: { accept: "text/plain;version=0.0.4" },
      signal: AbortSignal.timeout(this.options.timeoutMs ?? 3_000),
    });
    if (!response.ok) throw new Error(`HTTP ${response.status}`);
    return sumRequestsByNetwork(await response.text());
  }
}

/** Requests served per network in one gateway's exposition text. */
export function sumRequestsByNetwork(text: string): Map<string, number> {
  const byNetwork = new Map<string, number>();
  for (const sample of parseExposition(text)) {
    if (sample.name !== GATEWAY_REQUESTS_METRIC) continue;
    const network = sample.labels.network;
    if (network === undefined || !Number.isFinite(sample.value)) continue;
    byNetwork.set(network, (byNetwork.get(network) ?? 0) + sample.value);
  }
  return byNetwork;
}
