/**
 * The bench's load generator, a process of its own (its CPU is nobody's side): it builds the
 * workload's remote-write 1.0 requests once — protobuf `WriteRequest`s, snappy-compressed, as a
 * Prometheus sends them — and then plays the same bytes to each side on command. It speaks JSON
 * lines with bench/main.ts over stdin/stdout:
 *
 *   ← {"ready":true}
 *   → {"cmd":"generate", shape, hostsPerRequest, scrapesPerRequest}
 *   ← {"requests", "samples", "series", "bodyBytes", "rawBytes", "generateMs"}
 *   → {"cmd":"send", "url", "headers", "concurrency", "warmUpPercent"?}
 *   ← {"warmedUp":true, "acked"}   (after the first warmUpPercent% of the rounds, if any: the
 *   → {"cmd":"resume"}              loader waits, so the bench can read the side's CPU quiet)
 *   ← {"acked", "requests", "failedRequests", "retries", "firstError", "wallMs"}
 *   → {"cmd":"close"}
 *
 * Requests go in rounds: a round is `scrapesPerRequest` consecutive scrapes of every host, cut
 * into one request per `hostsPerRequest` hosts; up to `concurrency` requests of a round are in
 * flight, and the next round starts when the round is answered. Every series thus reaches a
 * side in time order and all series advance together, as a fleet's scrapes do — a side may
 * refuse a sample far behind its newest (Prometheus: older than half a block range), and a
 * free-running sender would make that happen. A sample counts once its request is answered
 * 2xx (ours answers after the stream's acknowledgement). A 5xx or 429 is retried with a
 * doubling pause, as Prometheus's sender does (bounded); any other answer fails the request.
 *
 * @example
 * // started by bench/main.ts through lab's spawnChild:
 * // node systems/metrics/bench/remote-write-loader.ts
 */
import { createInterface } from "node:readline";
import { setTimeout as sleep } from "node:timers/promises";
import type { Labels } from "../src/domain/labels.ts";
import { encodeWriteRequest } from "../src/domain/remote-write.ts";
import { snappyCompress } from "../src/domain/snappy.ts";
import { NodeExporterWorkload, type WorkloadShape } from "./node-exporter-workload.ts";

export interface GenerateCommand {
  cmd: "generate";
  shape: WorkloadShape;
  hostsPerRequest: number;
  scrapesPerRequest: number;
}

export interface Generated {
  requests: number;
  samples: number;
  series: number;
  rounds: number;
  /** Snappy-compressed bytes sent per side. */
  bodyBytes: number;
  /** The protobuf bytes before snappy. */
  rawBytes: number;
  generateMs: number;
}

export interface SendCommand {
  cmd: "send";
  url: string;
  headers: Record<string, string>;
  concurrency: number;
  /** The loader stops after this share of the rounds until told to resume (0 or absent: never). */
  warmUpPercent?: number;
}

/** Sent when the warm-up rounds are answered; the loader then waits for `{"cmd":"resume"}`. */
export interface WarmedUp {
  warmedUp: true;
  acked: number;
}

export interface SendResult {
  acked: number;
  requests: number;
  failedRequests: number;
  retries: number;
  firstError: string | undefined;
  wallMs: number;
}

interface Request {
  readonly body: Uint8Array;
  readonly samples: number;
}

/** Retries of one request answered 5xx/429 (or unreachable) before it counts as failed. */
const MAX_RETRIES = 8;
const FIRST_RETRY_MS = 50;
/** A request not answered in this long fails (a side stuck for 60 s is a result, not a hang). */
const REQUEST_TIMEOUT_MS = 60_000;

function generate(command: GenerateCommand): { rounds: Request[][]; generated: Generated } {
  const started = performance.now();
  const workload = new NodeExporterWorkload(command.shape);
  const { hosts, scrapes } = command.shape;
  const rounds: Request[][] = [];
  let [bodyBytes, rawBytes, samples] = [0, 0, 0];
  for (let first = 0; first < scrapes; first += command.scrapesPerRequest) {
    const last = Math.min(scrapes, first + command.scrapesPerRequest);
    const round: Request[] = [];
    for (let h0 = 0; h0 < hosts; h0 += command.hostsPerRequest) {
      const series: Array<{ labels: Labels; samples: Array<{ t: number; v: number }> }> = [];
      for (let host = h0; host < Math.min(hosts, h0 + command.hostsPerRequest); host++) {
        const own = workload.labels[host]!.map((labels) => ({
          labels,
          samples: [] as Array<{ t: number; v: number }>,
        }));
        for (let k = first; k < last; k++) {
          const { t, values } = workload.scrape(host, k);
          for (let i = 0; i < own.length; i++) own[i]!.samples.push({ t, v: values[i]! });
        }
        series.push(...own);
      }
      const raw = encodeWriteRequest(series);
      const body = snappyCompress(raw);
      const count = series.length * (last - first);
      round.push({ body, samples: count });
      bodyBytes += body.length;
      rawBytes += raw.length;
      samples += count;
    }
    rounds.push(round);
  }
  const generated: Generated = {
    rounds: rounds.length,
    requests: rounds.reduce((n, r) => n + r.length, 0),
    samples,
    series: workload.seriesCount,
    bodyBytes,
    rawBytes,
    generateMs: Math.round(performance.now() - started),
  };
  return { rounds, generated };
}

async function sendOne(request: Request, command: SendCommand, tally: SendResult): Promise<void> {
  for (let attempt = 0; ; attempt++) {
    let failure: string;
    try {
      const res = await fetch(command.url, {
        method: "POST",
        headers: command.headers,
        body: request.body,
        signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
      });
      const text = await res.text();
      if (res.status >= 200 && res.status < 300) {
        tally.acked += request.samples;
        return;
      }
      failure = `${res.status} ${text.slice(0, 300)}`;
      if (res.status < 500 && res.status !== 429) {
        tally.failedRequests++;
        tally.firstError ??= failure;
        return;
      }
    } catch (error) {
      failure = String(error);
    }
    if (attempt >= MAX_RETRIES) {
      tally.failedRequests++;
      tally.firstError ??= failure;
      return;
    }
    tally.retries++;
    await sleep(FIRST_RETRY_MS * 2 ** attempt);
  }
}

/** The round after which a send stops for the warm-up mark, or undefined (none, or no round left after it). */
function warmUpRoundsOf(rounds: number, percent: number | undefined): number | undefined {
  const warm = Math.floor((rounds * (percent ?? 0)) / 100);
  return warm >= 1 && warm < rounds ? warm : undefined;
}

/** `wallMs` leaves out the wait at the warm-up mark. */
async function send(
  rounds: Request[][],
  command: SendCommand,
  warmedUp: (acked: number) => Promise<void>,
): Promise<SendResult> {
  const tally: SendResult = {
    acked: 0,
    requests: 0,
    failedRequests: 0,
    retries: 0,
    firstError: undefined,
    wallMs: 0,
  };
  let started = performance.now();
  const every = Math.max(1, Math.floor(rounds.length / 10));
  const warmUpRounds = warmUpRoundsOf(rounds.length, command.warmUpPercent);
  for (const [index, round] of rounds.entries()) {
    let next = 0;
    const lane = async () => {
      while (next < round.length) {
        const request = round[next++]!;
        tally.requests++;
        await sendOne(request, command, tally);
      }
    };
    await Promise.all(Array.from({ length: Math.min(command.concurrency, round.length) }, lane));
    if ((index + 1) % every === 0) {
      process.stderr.write(`  loader: round ${index + 1}/${rounds.length}, ${tally.acked} samples acked\n`);
    }
    if (index + 1 === warmUpRounds) {
      const paused = performance.now();
      await warmedUp(tally.acked);
      started += performance.now() - paused;
    }
  }
  tally.wallMs = Math.round(performance.now() - started);
  return tally;
}

async function serve(): Promise<void> {
  let rounds: Request[][] = [];
  const reply = (value: unknown) => process.stdout.write(`${JSON.stringify(value)}\n`);
  const lines = createInterface({ input: process.stdin })[Symbol.asyncIterator]();
  const nextCommand = async () => {
    const { value, done } = await lines.next();
    return done ? ({ cmd: "close" } as const) : (JSON.parse(value) as Command);
  };
  const warmedUp = async (acked: number) => {
    reply({ warmedUp: true, acked } satisfies WarmedUp);
    const command = await nextCommand();
    if (command.cmd !== "resume")
      throw new Error(`loader: expected resume at the warm-up mark, got ${command.cmd}`);
  };
  reply({ ready: true });
  for (;;) {
    const command = await nextCommand();
    if (command.cmd === "close") break;
    if (command.cmd === "generate") {
      const built = generate(command);
      rounds = built.rounds;
      reply(built.generated);
    } else if (command.cmd === "send") reply(await send(rounds, command, warmedUp));
    else throw new Error(`loader: unexpected ${command.cmd}`);
  }
}

type Command = GenerateCommand | SendCommand | { cmd: "resume" } | { cmd: "close" };

if (import.meta.main) await serve();
