import type { z } from "zod";

/**
 * Reports every item of a list whose name an earlier item has, at `list[i].name`, naming the first:
 * "duplicate WHAT name NAME (also LIST[j])". Items are names in a config (networks, peers) that must be unique.
 */
export function reportDuplicateNames(
  items: ReadonlyArray<{ name: string }> | undefined,
  list: string,
  what: string,
  ctx: z.RefinementCtx,
): void {
  const first = new Map<string, number>();
  items?.forEach((item, i) => {
    const earlier = first.get(item.name);
    if (earlier === undefined) first.set(item.name, i);
    else
      ctx.addIssue({
        code: "custom",
        path: [list, i, "name"],
        message: `duplicate ${what} name ${item.name} (also ${list}[${earlier}])`,
      });
  });
}
