import { z } from "zod";

const UNITS_MS: Record<string, number> = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000 };
/** A duration as text; also the pattern of duration fields in the chart's values schema and the pool CRD. */
export const DURATION_PATTERN = /^(\d+(?:\.\d+)?)(ms|s|m|h)$/;

/** Parses "500ms", "2s", "10m", "1h" (or a bare number of seconds) into milliseconds. */
export function parseDuration(value: string | number): number | undefined {
  if (typeof value === "number") return Number.isFinite(value) && value >= 0 ? value * 1_000 : undefined;
  const match = DURATION_PATTERN.exec(value.trim());
  if (!match) return undefined;
  return Number(match[1]) * UNITS_MS[match[2]!]!;
}

/** A duration option: written as "2s" or 2 (seconds), read as milliseconds. */
export const duration = z.union([z.number(), z.string()]).transform((value, ctx) => {
  const ms = parseDuration(value);
  if (ms === undefined) {
    ctx.addIssue({
      code: "custom",
      message: `must be a duration such as "500ms", "2s", "10m" or a number of seconds (got ${JSON.stringify(value)})`,
    });
    return z.NEVER;
  }
  return ms;
});
