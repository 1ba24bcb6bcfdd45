import { CronExpressionParser } from "cron-parser";
import type { CronFloorConfig } from "../config/sections/scaling.js";

export interface ActiveFloor {
  name: string;
  minReplicas: number;
  /** When the floor's current period started (ms since the epoch). */
  since: number;
}

export function floorName(floor: CronFloorConfig): string {
  return floor.name ?? `${floor.start} until ${floor.end} ${floor.timezone}`;
}

/** The last time at or before `now` that `expression` fires in `timezone`, or undefined if none within its range. */
export function lastFiring(expression: string, timezone: string, now: number): number | undefined {
  try {
    // cron-parser's prev() is strictly before its current date; one millisecond later makes "at now" count.
    const parsed = CronExpressionParser.parse(expression, { currentDate: new Date(now + 1), tz: timezone });
    return parsed.prev().getTime();
  } catch {
    return undefined;
  }
}

/**
 * Whether a cron floor is in force at `now`: its last start is later than its last end (an end and a start at the
 * same minute end the period). Pure: evaluated from the clock and the floor's time zone, daylight saving included.
 */
export function floorActiveAt(floor: CronFloorConfig, now: number): ActiveFloor | undefined {
  const start = lastFiring(floor.start, floor.timezone, now);
  if (start === undefined) return undefined;
  const end = lastFiring(floor.end, floor.timezone, now);
  if (end !== undefined && end >= start) return undefined;
  return { name: floorName(floor), minReplicas: floor.minReplicas, since: start };
}

/** The highest cron floor in force at `now`, if any. */
export function activeCronFloor(
  floors: ReadonlyArray<CronFloorConfig>,
  now: number,
): ActiveFloor | undefined {
  let best: ActiveFloor | undefined;
  for (const floor of floors) {
    const active = floorActiveAt(floor, now);
    if (active && (!best || active.minReplicas > best.minReplicas)) best = active;
  }
  return best;
}
