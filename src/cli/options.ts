import { InvalidArgumentError } from "commander";

/** Commander parser for `--port` and `--admin-port`: a whole number 0-65535 (0 picks a free port). */
export function portOption(value: string): number {
  const n = Number(value);
  if (!/^\d+$/.test(value) || n > 65_535) throw new InvalidArgumentError("must be a port number (0-65535)");
  return n;
}
