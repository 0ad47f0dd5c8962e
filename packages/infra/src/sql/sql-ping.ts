/**
 * Readiness with a deadline: a probe must answer "not ready" in bounded time even
 * when the engine hangs (a dead link, or on PGlite a long transaction holding its
 * only connection).
 *
 * @example
 * await pingWithin(() => pool.query("SELECT 1"), 2_000); // rejects SQL_UNAVAILABLE after 2 s
 */
import { sqlErrors } from "./sql-errors.ts";

export const DEFAULT_PING_TIMEOUT_MS = 2_000;

/** Resolves when `probe` does within `timeoutMs`; rejects with its error, or `SQL_UNAVAILABLE` on timeout. */
export async function pingWithin(probe: () => Promise<unknown>, timeoutMs: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(sqlErrors.create("SQL_UNAVAILABLE", { fields: { timeoutMs }, detail: "ping timed out" })),
      timeoutMs,
    );
  });
  try {
    // race() subscribes to the probe, so its late rejection after a timeout is handled, not unhandled.
    await Promise.race([probe(), timeout]);
  } finally {
    clearTimeout(timer);
  }
}
