import { z } from "zod";
import { errorMessage } from "../errorMessage.js";
import { rateFailed, rateOf, type RateReading, type RateSource } from "../rateReading.js";

export interface PrometheusSourceOptions {
  /** Base URL of the Prometheus server (its `/api/v1/query` is called). */
  url: string;
  /** PromQL per network; `{network}` is replaced by the network name. */
  query: string | ((network: string) => string);
  timeoutMs?: number;
  fetch?: typeof fetch;
}

const sampleValue = z.tuple([z.number(), z.string()]);
const queryResponse = z.discriminatedUnion("status", [
  z.object({
    status: z.literal("success"),
    data: z.discriminatedUnion("resultType", [
      z.object({ resultType: z.literal("vector"), result: z.array(z.object({ value: sampleValue })) }),
      z.object({ resultType: z.literal("scalar"), result: sampleValue }),
      z.object({ resultType: z.enum(["matrix", "string"]) }),
    ]),
  }),
  z.object({ status: z.literal("error"), errorType: z.string().optional(), error: z.string().optional() }),
]);

/**
 * Fills `{network}` (and, for a pool in a cluster, `{namespace}`) into a PromQL template (both are DNS labels, safe
 * inside a label matcher).
 */
export function promqlFor(template: string, network: string, namespace?: string): string {
  const filled = template.replaceAll("{network}", network);
  return namespace === undefined ? filled : filled.replaceAll("{namespace}", namespace);
}

/**
 * The request rate from a Prometheus server's instant query API. The result must be a scalar or a vector (its samples
 * add up); an empty vector, NaN, a negative value, an error status or no answer is a failure, never a rate of 0.
 */
export class PrometheusSource implements RateSource {
  readonly kind = "prometheus";

  constructor(private readonly options: PrometheusSourceOptions) {}

  async read(network: string): Promise<RateReading> {
    const { query } = this.options;
    const promql = typeof query === "function" ? query(network) : promqlFor(query, network);
    const url = new URL(
      "api/v1/query",
      this.options.url.endsWith("/") ? this.options.url : `${this.options.url}/`,
    );
    let body: unknown;
    let status: number;
    try {
      const response = await (this.options.fetch ?? fetch)(url, {
        method: "POST",
        headers: { "content-type": "application/x-www-form-urlencoded", accept: "application/json" },
        body: new URLSearchParams({ query: promql }).toString(),
        signal: AbortSignal.timeout(this.options.timeoutMs ?? 5_000),
      });
      status = response.status;
      const text = await response.text();
      try {
        body = JSON.parse(text);
      } catch {
        return rateFailed(`Prometheus answered HTTP ${status} without JSON`);
      }
    } catch (error) {
      return rateFailed(`Prometheus query failed: ${errorMessage(error)}`);
    }
    const parsed = queryResponse.safeParse(body);
    if (!parsed.success) return rateFailed(`Prometheus answered HTTP ${status} with an unexpected body`);
    const answer = parsed.data;
    if (answer.status === "error") {
      return rateFailed(
        `Prometheus query error (${answer.errorType ?? `HTTP ${status}`}): ${answer.error ?? "no detail"}`,
      );
    }
    const data = answer.data;
    let values: string[];
    if (data.resultType === "scalar") values = [data.result[1]];
    else if (data.resultType === "vector") values = data.result.map((s) => s.value[1]);
    else return rateFailed(`PromQL must give a scalar or an instant vector, not a ${data.resultType}`);
    if (values.length === 0) return rateFailed(`PromQL returned no series: ${promql}`);
    const total = values.reduce((sum, v) => sum + Number(v), 0);
    if (!Number.isFinite(total) || total < 0) return rateFailed(`PromQL returned ${total}: ${promql}`);
    return rateOf(total);
  }
}
