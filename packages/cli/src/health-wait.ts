/**
 * Waits for a started system to answer `GET /healthz` with 200: a bounded poll
 * (the child is another process; there is no event to wait on), cut short by an
 * abort signal when the child dies or the user presses Ctrl-C.
 *
 * @example
 * const outcome = await waitForHealthy("http://127.0.0.1:8101", { timeoutMs: 60_000, intervalMs: 100,
 *   requestTimeoutMs: 1_000, signal: controller.signal }); // "healthy" | "timeout" | "aborted"
 */
import { request } from "node:http";
import { setTimeout as sleep } from "node:timers/promises";

export type HealthOutcome = "healthy" | "timeout" | "aborted";

export interface HealthWaitOptions {
  /** Give up after this long; PGlite's first start takes a few seconds, so keep it generous. */
  timeoutMs: number;
  /** Pause between probes. */
  intervalMs: number;
  /** Bound on one probe, so a service that accepts but never answers cannot stall the wait. */
  requestTimeoutMs: number;
  signal?: AbortSignal;
}

export async function waitForHealthy(baseUrl: string, options: HealthWaitOptions): Promise<HealthOutcome> {
  const deadline = performance.now() + options.timeoutMs;
  const url = new URL("/healthz", baseUrl);
  // The deadline bounds the loop; this cap only guards against a clock that does not move.
  const maxProbes = Math.ceil(options.timeoutMs / Math.max(1, options.intervalMs)) + 1;
  for (let probe = 0; probe < maxProbes; probe++) {
    if (options.signal?.aborted) return "aborted";
    if ((await probeStatus(url, options.requestTimeoutMs)) === 200) return "healthy";
    const leftMs = deadline - performance.now();
    if (leftMs <= 0) return "timeout";
    try {
      await sleep(Math.min(options.intervalMs, leftMs), undefined, { signal: options.signal });
    } catch {
      return "aborted";
    }
  }
  return "timeout";
}

/** The HTTP status of one GET, or 0 when the connection fails or times out. */
export function probeStatus(url: URL, timeoutMs: number): Promise<number> {
  return new Promise((resolve) => {
    // agent: false so no keep-alive socket outlives the probe and holds the CLI open.
    const req = request(url, { method: "GET", agent: false, timeout: timeoutMs }, (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    });
    req.on("timeout", () => req.destroy());
    req.on("error", () => resolve(0));
    req.end();
  });
}
