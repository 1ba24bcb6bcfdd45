import { pino } from "pino";
import type { Logger } from "pino";
import pretty from "pino-pretty";
import type { LogConfig } from "../config/sections/log.js";

export type { Logger };

/** Fields that must never reach a log line, wherever they appear. */
export const REDACTED_PATHS = [
  "password",
  "*.password",
  "secretKey",
  "*.secretKey",
  "token",
  "*.token",
  "databaseUrl",
  "*.databaseUrl",
  "req.headers.cookie",
  'req.headers["x-secret-key"]',
  'res.headers["set-cookie"]',
];

export function createLogger(
  config: Partial<LogConfig> = {},
  destination: NodeJS.WritableStream = process.stdout,
): Logger {
  const format = config.format ?? "auto";
  const readable =
    format === "pretty" || (format === "auto" && (destination as NodeJS.WriteStream).isTTY === true);
  const options = {
    level: config.level ?? "info",
    redact: { paths: REDACTED_PATHS, censor: "[redacted]" },
    base: { pid: process.pid },
  };
  if (readable) {
    return pino(
      options,
      pretty({
        destination,
        colorize: true,
        translateTime: "SYS:HH:MM:ss.l",
        ignore: "pid,hostname",
        sync: true,
      }),
    );
  }
  return pino(options, destination);
}

/** A logger that writes nothing, for tests and library use. */
export function silentLogger(): Logger {
  return pino({ level: "silent" });
}
