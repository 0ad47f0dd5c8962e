/**
 * A bounded wait for a state only something else can change (another process, a loop on
 * a timer, a reconnect): there is no event to await, so `probe` is polled every
 * `intervalMs` until it gives a value `accept` takes, at most `timeoutMs`. A probe that
 * throws is retried; when time runs out the failure names what was awaited, carries the
 * last value seen, and the last error as its `cause`.
 *
 * @example
 * await eventually(() => engine.state === "exited", { what: "the engine to exit" });
 * const row = await eventually(() => db.one("SELECT …"), { what: "the refund row", timeoutMs: 10_000 });
 */
import { setTimeout as sleep } from "node:timers/promises";
import { labErrors } from "./lab-errors.ts";

export interface EventuallyOptions<T> {
  /** What is awaited, for the failure message: "the worker to exit". */
  what?: string;
  /** The whole wait's bound. Default 5 000 ms. */
  timeoutMs?: number;
  /** Pause between probes; 0 polls on the next turn of the event loop (setImmediate). Default 25 ms. */
  intervalMs?: number;
  /** Which values end the wait. Default: anything but `undefined`, `null` and `false`. */
  accept?: (value: T) => boolean;
}

const settled = (value: unknown) => value !== undefined && value !== null && value !== false;

function describe(value: unknown): string {
  try {
    return JSON.stringify(value, (_key, v) => (typeof v === "bigint" ? `${v}n` : v)) ?? String(value);
  } catch {
    return String(value);
  }
}

/**
 * Polls `probe` until `accept` takes its value; resolves that value. Throws
 * LAB_WAIT_TIMEOUT after `timeoutMs` (see the module's example).
 *
 * @example
 * const n = await eventually(async () => (await count()) >= 3 ? count() : undefined, { what: "3 rows" });
 */
export async function eventually<T>(
  probe: () => T | Promise<T>,
  options: EventuallyOptions<T> = {},
): Promise<Exclude<T, undefined | null | false>> {
  const timeoutMs = options.timeoutMs ?? 5_000;
  const intervalMs = options.intervalMs ?? 25;
  const accept = options.accept ?? settled;
  const deadline = performance.now() + timeoutMs;
  let probes = 0;
  let last: { value: T } | undefined;
  let lastError: unknown;
  for (;;) {
    probes++;
    try {
      const value = await probe();
      last = { value };
      if (accept(value)) return value as Exclude<T, undefined | null | false>;
    } catch (error) {
      lastError = error;
    }
    if (performance.now() >= deadline) break;
    if (intervalMs > 0) await sleep(intervalMs);
    else await new Promise((resolve) => setImmediate(resolve));
  }
  const what = options.what ?? "the condition";
  const value = last ? `; last value ${describe(last.value)}` : "";
  const threw = lastError === undefined ? "" : `; the last error: ${String(lastError)}`;
  throw labErrors.create("LAB_WAIT_TIMEOUT", {
    detail: `timed out after ${timeoutMs} ms (${probes} probes) waiting for ${what}${value}${threw}`,
    fields: { what, timeoutMs, probes },
    ...(lastError === undefined ? {} : { cause: lastError }),
  });
}
