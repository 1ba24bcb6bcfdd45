import type { Response } from "express";

/** RFC 9457 problem details with a stable, machine-readable `code` and always a human `detail`. */
export function sendProblem(
  res: Response,
  status: number,
  code: string,
  title: string,
  detail: string,
  extra: Record<string, unknown> = {},
): void {
  res
    .status(status)
    .type("application/problem+json")
    .send(
      JSON.stringify({
        type: `https://lightfleet.io/problems/${code}`,
        title,
        status,
        code,
        detail,
        ...extra,
      }),
    );
}
