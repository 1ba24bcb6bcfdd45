import { errorMessage } from "../errorMessage.js";
import { rateOf, type RateReading, type RateSource } from "../rateReading.js";
import { CounterRates } from "./counterRates.js";

/** What the scaler needs of a gateway running in the same process (`lightfleet up`). */
export interface RequestCounters {
  /** Requests served so far, per network (cumulative; a network with none yet may be absent). */
  requestTotals(): ReadonlyMap<string, number>;
}

export interface InProcessGatewaySourceOptions {
  gateway: RequestCounters;
  clock: () => number;
  /** Window per network over which the counters become a rate. */
  windowMs: (network: string) => number;
}

/** The request rate of the gateway in this process, from its counters sampled at every read. */
export class InProcessGatewaySource implements RateSource {
  readonly kind = "gateway";
  private readonly rates = new CounterRates();

  constructor(private readonly options: InProcessGatewaySourceOptions) {}

  read(network: string): Promise<RateReading> {
    const now = this.options.clock();
    let total: number;
    try {
      total = this.options.gateway.requestTotals().get(network) ?? 0;
    } catch (error) {
      return Promise.resolve({ ok: false, failed: true, reason: `gateway counters: ${errorMessage(error)}` });
    }
    this.rates.record(network, "gateway", now, total);
    const rate = this.rates.rate(network, now, this.options.windowMs(network));
    return Promise.resolve(
      rate === undefined
        ? { ok: false, failed: false, reason: "warming up (one sample of the counters so far)" }
        : rateOf(rate),
    );
  }
}
