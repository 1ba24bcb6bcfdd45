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

export interface ReadableLogOptions {
  /** Readable records on one line each, fields inline (next to a view that prints one line per event). */
  singleLine?: boolean;
}

export function createLogger(
  config: Partial<LogConfig> = {},
  destination: NodeJS.WritableStream = process.stdout,
  readableOptions: ReadableLogOptions = {},
): Logger {
  outliveClosedOutput(destination);
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
        ...(readableOptions.singleLine === true ? singleLineOptions() : {}),
      }),
    );
  }
  return pino(options, destination);
}

const guarded = new WeakSet<NodeJS.WritableStream>();

/**
 * A service outlives the reader of its logs: when the output fails (EPIPE once `lightfleet gateway | head` has exited,
 * or a log shipper died), it says so once on stderr and drops records from then on, instead of dying of an unhandled
 * stream error with every client's call in flight.
 */
function outliveClosedOutput(destination: NodeJS.WritableStream): void {
  // Any object with write() will do as pino's destination; only a stream reports failed writes.
  if (typeof destination.on !== "function" || guarded.has(destination)) return;
  guarded.add(destination);
  let told = false;
  destination.on("error", (error: NodeJS.ErrnoException) => {
    if (told) return;
    told = true;
    if (destination === process.stderr) return;
    process.stderr.on("error", () => {});
    process.stderr.write(
      `log output closed (${error.code ?? error.message}): log records are dropped from now on\n`,
    );
  });
}

/**
 * Records on one line: fields inline, and the error (which pino-pretty would print on lines of its own, whatever its
 * error keys) after the message.
 */
function singleLineOptions() {
  return {
    singleLine: true,
    ignore: "pid,hostname,err",
    messageFormat: (log: Record<string, unknown>, messageKey: string) => {
      const message = String(log[messageKey] ?? "");
      const err = log.err;
      if (err === undefined) return message;
      const text =
        typeof err === "string" ? err : ((err as { message?: string }).message ?? JSON.stringify(err));
      return `${message}: ${text}`;
    },
  };
}

/** A logger that writes nothing, for tests and library use. */
export function silentLogger(): Logger {
  return pino({ level: "silent" });
}
