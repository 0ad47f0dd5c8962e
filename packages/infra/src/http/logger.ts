/**
 * The service logger: pino writing one JSON object per line, each carrying the
 * service name and version, an ISO timestamp and the level as a word (log
 * pipelines filter on `"level":"error"`, not on pino's 50).
 *
 * @example
 * const log = createLogger({ service: "webhooks", version: "0.1.0", level: "debug" });
 * const quiet = createLogger({ service: "test", version: "0", level: "silent" });
 * const lines: string[] = [];
 * const captured = createLogger({ service: "test", version: "0", destination: { write: (l) => lines.push(l) } });
 */
import { hostname } from "node:os";
import { type DestinationStream, type LevelWithSilent, type Logger, pino } from "pino";

export type { Logger } from "pino";

export interface LogOptions {
  /** Minimum level written; `silent` writes nothing. Default `info`. */
  level?: LevelWithSilent;
  /** Where lines go; default stdout. Tests pass `{ write(line) {...} }` to capture. */
  destination?: DestinationStream;
}

/**
 * Header paths that must never reach a log even if someone logs a whole request:
 * credentials and session cookies.
 */
const REDACTED_PATHS = [
  "req.headers.authorization",
  "req.headers.cookie",
  'req.headers["x-api-key"]',
  'res.headers["set-cookie"]',
];

/** A pino logger for one service. */
export function createLogger(options: LogOptions & { service: string; version: string }): Logger {
  // Synchronous stdout: a line logged just before a crash or process.exit is not lost.
  // The cost is a write syscall per line; benchmarks run at `warn` to keep it off the hot path.
  const destination = options.destination ?? pino.destination({ dest: 1, sync: true });
  return pino(
    {
      level: options.level ?? "info",
      base: { service: options.service, version: options.version, pid: process.pid, hostname: hostname() },
      timestamp: pino.stdTimeFunctions.isoTime,
      formatters: { level: (label) => ({ level: label }) },
      redact: { paths: REDACTED_PATHS, censor: "[redacted]" },
    },
    destination,
  );
}
