import { CronExpressionParser } from "cron-parser";
import { validate as validateCron } from "node-cron";
import { z } from "zod";
import { duration } from "../duration.js";
import { httpUrl } from "../urls.js";

/** A cron expression both node-cron (scheduling in the process) and cron-parser (pure evaluation) accept. */
const cronExpression = z
  .string()
  .min(1)
  .superRefine((expression, ctx) => {
    let parses = true;
    try {
      CronExpressionParser.parse(expression, { strict: false });
    } catch {
      parses = false;
    }
    if (!parses || !validateCron(expression)) {
      ctx.addIssue({
        code: "custom",
        message: `must be a cron expression such as "0 8 * * 1-5" (minute hour day-of-month month day-of-week; got ${JSON.stringify(expression)})`,
      });
    }
  });

/** An IANA time zone name, checked against the runtime's time zone database. */
export const timeZone = z
  .string()
  .min(1)
  .refine(
    (zone) => {
      try {
        new Intl.DateTimeFormat("en-US", { timeZone: zone });
        return true;
      } catch {
        return false;
      }
    },
    { message: 'must be an IANA time zone such as "UTC" or "Europe/Berlin"' },
  );

/**
 * A cron floor (like KEDA's cron scaler): from each `start` until the next `end`, in `timezone`, the pool keeps at
 * least `minReplicas` nodes. "Weekdays 08:00-20:00 at least 6" is start "0 8 * * 1-5", end "0 20 * * 1-5".
 */
export const cronFloorSchema = z.strictObject({
  /** Shown in reasons and logs; defaults to "start-end". */
  name: z.string().min(1).optional(),
  start: cronExpression,
  end: cronExpression,
  timezone: timeZone.default("UTC"),
  minReplicas: z.number().int().min(0),
});
export type CronFloorConfig = z.infer<typeof cronFloorSchema>;

/**
 * `{network}` in a PromQL expression is replaced by the network name, and for a LightNodePool `{namespace}` by its
 * namespace (a controller may run one network in several namespaces).
 */
export const DEFAULT_PROMQL =
  'sum(rate(lightfleet_gateway_upstream_requests_total{network="{network}"}[1m]))';

export const rateSourceSchema = z.discriminatedUnion("type", [
  /** The gateway's request counters: in-process in `up`, scraped from the gateway pods in Kubernetes. */
  z.strictObject({ type: z.literal("gateway") }),
  /** A Prometheus server's HTTP query API (`/api/v1/query`). */
  z.strictObject({
    type: z.literal("prometheus"),
    url: httpUrl,
    query: z.string().min(1).default(DEFAULT_PROMQL),
    timeout: duration.default(5_000),
  }),
]);
export type RateSourceConfig = z.infer<typeof rateSourceSchema>;

/** The most light nodes a pool may be scaled to. */
export const MAX_POOL_REPLICAS = 1_000;

/** Autoscaling of one pool on its request rate (`networks[].scaling:`). Durations are milliseconds once parsed. */
export const scalingSchema = z
  .strictObject({
    /** False leaves the size to an HPA, KEDA or a person; the rate and the desired size are still exported. */
    enabled: z.boolean().default(true),
    minReplicas: z.number().int().min(0).max(MAX_POOL_REPLICAS).default(1),
    /** Bounded, so a typo (10000 for 100) cannot ask the cluster for thousands of light nodes. */
    maxReplicas: z.number().int().min(1).max(MAX_POOL_REPLICAS).default(10),
    /** Requests per second one light node serves: desired = ceil(rate / targetRequestsPerNode). */
    targetRequestsPerNode: z.number().positive().default(50),
    /** Relative change of the per-node load below which the size is kept (as an HPA's 10%). */
    tolerance: z.number().min(0).lt(1).default(0.1),
    /** A scale-down follows the highest recommendation of this window (as an HPA's 300 s). */
    scaleDownStabilization: duration.default(300_000),
    /** Nodes added at most per decision when the rate asks for more (floors are applied at once). */
    scaleUpStep: z.number().int().min(1).default(4),
    /** Window over which the gateway's counters are turned into a rate. */
    rateWindow: duration.default(60_000),
    source: rateSourceSchema.default({ type: "gateway" }),
    // Bounded, so the CRD's rule over them stays within the API server's cost budget.
    cronFloors: z.array(cronFloorSchema).max(32).default([]),
  })
  .superRefine((scaling, ctx) => {
    scaling.cronFloors.forEach((floor, i) => {
      if (floor.minReplicas > scaling.maxReplicas) {
        ctx.addIssue({
          code: "custom",
          path: ["cronFloors", i, "minReplicas"],
          message: `must not exceed maxReplicas (${scaling.maxReplicas})`,
        });
      }
    });
  });
export type ScalingConfig = z.infer<typeof scalingSchema>;
