/**
 * The read bench's open-loop load generator, a process of its own (the house rule: a generator
 * sharing the server's or the bench's event loop measures itself). It runs lab's `runOpenLoop`
 * over home-feed reads on keep-alive HTTP and speaks JSON lines over stdin/stdout:
 *
 *   ← {"ready": true}
 *   → {"cmd":"run", url, requests: [{path, authorization}], first, stride, ratePerS, durationMs, warmupMs}
 *   ← {"asked", "count", "ok", "errors", "timeouts", "dropped", "late", "sentPerS", "achievedRatePerS", "buckets"}
 *   → {"cmd":"close"}
 *
 * Request i of this child reads `requests[(first + i × stride) % n]`, so N children started with
 * first = 0..N-1 and stride N share the readers without reading the same one in lockstep.
 * `buckets` is the latency histogram (µs, [lowValue, count] pairs) for the parent to merge.
 *
 * @example
 * const child = await spawnChild(new URL("./read-load-child.ts", import.meta.url), { ready: /"ready"/ });
 * child.send(JSON.stringify({ cmd: "run", url, requests, first: 0, stride: 2, ratePerS: 1_000, durationMs: 5_000, warmupMs: 1_000 }));
 * const result = JSON.parse(await child.nextLine()) as ReadLoadResult;
 */
import { Agent, get } from "node:http";
import { createInterface } from "node:readline";
import { runOpenLoop } from "@casebook/lab/load-generator";

export interface ReadLoadRequest {
  readonly path: string;
  readonly authorization: string;
}

export interface ReadLoadCommand {
  readonly cmd: "run";
  readonly url: string;
  readonly requests: readonly ReadLoadRequest[];
  readonly first: number;
  readonly stride: number;
  readonly ratePerS: number;
  readonly durationMs: number;
  readonly warmupMs: number;
}

export interface ReadLoadResult {
  /** The rate this child was asked for. */
  readonly asked: number;
  /** Measured requests answered or failed (dropped ones excluded): the ones sent. */
  readonly count: number;
  readonly ok: number;
  /** Non-2xx answers, socket errors and timeouts. */
  readonly errors: number;
  readonly timeouts: number;
  /** Due while MAX_IN_FLIGHT were in flight, so never sent. */
  readonly dropped: number;
  /** Sent more than 10 ms after their intended time (the generator fell behind). */
  readonly late: number;
  /** Measured sends per second of the measured schedule. */
  readonly sentPerS: number;
  readonly achievedRatePerS: number;
  /** Latencies from the intended send time, µs: [lowValue, count]. */
  readonly buckets: readonly (readonly [number, number])[];
}

const REQUEST_TIMEOUT_MS = 5_000;
const MAX_IN_FLIGHT = 2_000;

function read(agent: Agent, url: URL, request: ReadLoadRequest, signal: AbortSignal): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = get(
      {
        agent,
        host: url.hostname,
        port: url.port,
        path: request.path,
        headers: { authorization: request.authorization },
        signal,
      },
      (res) => {
        res.resume();
        res.once("end", () => resolve(res.statusCode ?? 0));
      },
    );
    req.once("error", reject);
  });
}

export async function runReadLoad(command: ReadLoadCommand): Promise<ReadLoadResult> {
  const agent = new Agent({ keepAlive: true, maxSockets: 256 });
  const url = new URL(command.url);
  const n = command.requests.length;
  try {
    const report = await runOpenLoop({
      ratePerS: command.ratePerS,
      durationMs: command.durationMs,
      warmupMs: command.warmupMs,
      requestTimeoutMs: REQUEST_TIMEOUT_MS,
      maxInFlight: MAX_IN_FLIGHT,
      task: async ({ index, signal }) => {
        const request = command.requests[(command.first + index * command.stride) % n]!;
        const status = await read(agent, url, request, signal);
        if (status !== 200 && status !== 206) throw new Error(`status ${status}`);
      },
    });
    const measuredS = (command.durationMs - command.warmupMs) / 1_000;
    return {
      asked: command.ratePerS,
      count: report.count,
      ok: report.ok,
      errors: report.errors,
      timeouts: report.timeouts,
      dropped: report.dropped,
      late: report.late,
      sentPerS: report.count / measuredS,
      achievedRatePerS: report.achievedRatePerS,
      buckets: [...report.histogram.buckets()].map((b) => [b.lowValue, b.count] as const),
    };
  } finally {
    agent.destroy();
  }
}

async function serve(): Promise<void> {
  const reply = (value: unknown) => process.stdout.write(`${JSON.stringify(value)}\n`);
  reply({ ready: true });
  for await (const line of createInterface({ input: process.stdin })) {
    const command = JSON.parse(line) as ReadLoadCommand | { cmd: "close" };
    if (command.cmd === "close") break;
    reply(await runReadLoad(command));
  }
  process.exit(0);
}

if (import.meta.main) await serve();
