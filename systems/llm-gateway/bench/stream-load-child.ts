/**
 * The bench's load generator, a process of its own (never sharing an event loop with the
 * servers it measures): it holds `concurrency` chat streams open in a closed loop against
 * one target (the simulator itself, our gateway, Portkey) and times each from its send to
 * the first content token (TTFT) and to `data: [DONE]` (total). Every target gets the same
 * HTTP client (node:http, one keep-alive pool) and the same requests. It speaks JSON lines over stdin/stdout:
 *
 *   ← {"ready":true}
 *   → {"cmd":"run", url, headers, model, concurrency, spreadStartMs, durationMs, warmupMs, promptWords, maxTokens, temperature}
 *   ← {"ok", "errors", "unfinished", "firstError", "cacheHits", "ttftMs": {p50, p99, …}, "totalMs": {p50, p99, …}}
 *
 * Each prompt is `promptWords` made-up words drawn afresh per request (seeded by the run's
 * `promptSeed` and the request's index): no two requests share a prompt — not within a run,
 * nor across the bench's runs and rounds against the same tenant — so a semantic cache looks
 * up and misses.
 */
import { Agent, request as httpRequest } from "node:http";
import { createInterface } from "node:readline";
import { seededRandom } from "@casebook/kit/random";
import { runClosedLoop } from "@casebook/lab/load-generator";

export interface RunCommand {
  cmd: "run";
  url: string;
  headers: Record<string, string>;
  model: string;
  concurrency: number;
  /** The closed loop's streams start one by one across this span (lab's `spreadStartMs`); 0 starts them together. */
  spreadStartMs: number;
  durationMs: number;
  warmupMs: number;
  promptWords: number;
  /** Distinct per run: the prompts of two runs never repeat each other. */
  promptSeed: string;
  maxTokens: number;
  temperature: number;
}

export interface LatencyMs {
  p50: number;
  p99: number;
  max: number;
  count: number;
}

export interface RunResult {
  ok: number;
  errors: number;
  firstError: string | undefined;
  /** Streams sent in the measured window still running when the run ended (neither ok nor failed). */
  unfinished: number;
  /** Streams that ended whole after the warmup (whenever sent): the work the target's CPU time after the warmup paid for. */
  finished: number;
  /** Answers a semantic cache served (`x-llm-gateway-cache: hit`): 0 is what the bench wants. */
  cacheHits: number;
  ttftMs: LatencyMs;
  totalMs: LatencyMs;
}

const SYLLABLES = [
  "ka",
  "lo",
  "mi",
  "ne",
  "ru",
  "sa",
  "to",
  "vi",
  "ze",
  "po",
  "da",
  "fe",
  "gu",
  "hi",
  "jo",
  "bu",
];
/** A stream not done within this is an error (the run moves on). */
const STREAM_TIMEOUT_MS = 60_000;

/** `words` made-up words (2–3 syllables each: about 2.5 tokens a word), the same for the same seed and index. */
export function promptOf(index: number, words: number, seed = ""): string {
  const random = seededRandom(`prompt-${seed}${index}`);
  const out: string[] = [];
  for (let i = 0; i < words; i++) {
    const length = 2 + Math.floor(random.next() * 2);
    let word = "";
    for (let s = 0; s < length; s++) word += SYLLABLES[Math.floor(random.next() * SYLLABLES.length)];
    out.push(word);
  }
  return `Summarise: ${out.join(" ")}`;
}

/**
 * Exact nearest-rank percentiles of a run's times: a run measures hundreds to a few thousand
 * streams, and the differences the bench compares are fractions of a millisecond — finer than
 * a histogram's buckets at 5 s (256 µs at 4 significant digits).
 */
export function summaryMs(times: number[]): LatencyMs {
  const sorted = times.toSorted((a, b) => a - b);
  const at = (q: number) => sorted[Math.max(0, Math.ceil(q * sorted.length) - 1)] ?? 0;
  return { p50: at(0.5), p99: at(0.99), max: sorted.at(-1) ?? 0, count: sorted.length };
}

/** Request `index`'s wait before it is sent, in ms: [0, 1), drawn from the index alone. */
export function phaseOf(index: number): number {
  return seededRandom(`phase-${index}`).next();
}

/**
 * Waits `phaseOf(index)` — 0–1 ms, the same for request `index` in every run, so every target
 * gets the same waits — without blocking the reads of the streams already open. Why: the
 * simulator paces an answer with timers, which count whole milliseconds of its event loop from
 * the request's arrival, and a closed loop sends its next request the moment an answer ends — on
 * one of those whole milliseconds. Every request would then reach the simulator in the same phase
 * of its millisecond, and whatever a relay in between adds to the request (0.3 ms, 0.8 ms) would
 * move the answer's end by either nothing or a whole millisecond. Independent clients arrive at
 * any phase; the wait puts them there. Node's timers cannot wait less than a millisecond: this
 * one turns the event loop (`setImmediate`) until the time has passed.
 */
export function phaseWait(index: number): Promise<void> {
  const until = performance.now() + phaseOf(index);
  return new Promise((resolve) => {
    const check = () => (performance.now() >= until ? resolve() : setImmediate(check));
    check();
  });
}

/** The first content token: an OpenAI delta `"content":"x…"` with text (the role chunk's is ""). */
const CONTENT = /"content":"[^"]/;

/** One keep-alive pool for every stream of the process: no connection opened per request. */
const agent = new Agent({ keepAlive: true, maxSockets: Number.POSITIVE_INFINITY });

interface StreamTimes {
  ttftMs: number;
  /** To the read that carried `data: [DONE]`: stamped in that read, before anything else runs. */
  totalMs: number;
  cacheHit: boolean;
}

/**
 * One stream on node:http (no WHATWG stream, no promise per chunk: the generator's own cost
 * per chunk and per request is what it adds to every target's figures). Both times are taken
 * in the callback of the read that carries the event, so they never include the generator's
 * work for other streams queued behind that read (the next requests it sends, their bodies).
 */
function oneStream(command: RunCommand, index: number, signal: AbortSignal): Promise<StreamTimes> {
  const body = JSON.stringify({
    model: command.model,
    stream: true,
    max_tokens: command.maxTokens,
    temperature: command.temperature,
    messages: [{ role: "user", content: promptOf(index, command.promptWords, `${command.promptSeed}-`) }],
  });
  return new Promise((resolve, reject) => {
    const started = performance.now();
    const request = httpRequest(command.url, {
      method: "POST",
      agent,
      headers: {
        "content-type": "application/json",
        "content-length": Buffer.byteLength(body),
        ...command.headers,
      },
      signal: AbortSignal.any([signal, AbortSignal.timeout(STREAM_TIMEOUT_MS)]),
    });
    request.once("error", reject);
    request.once("response", (res) => {
      res.setEncoding("utf8");
      if (res.statusCode !== 200) {
        let text = "";
        res.on("data", (part: string) => {
          if (text.length < 200) text += part;
        });
        res.once("end", () => reject(new Error(`${res.statusCode}: ${text.slice(0, 200)}`)));
        return;
      }
      let ttftMs = -1;
      let totalMs = -1;
      let tail = "";
      res.on("data", (text: string) => {
        const now = performance.now();
        const seen = tail + text;
        if (ttftMs < 0 && CONTENT.test(seen)) ttftMs = now - started;
        if (totalMs < 0 && seen.includes("[DONE]")) totalMs = now - started;
        tail = seen.slice(-64);
      });
      res.once("error", reject);
      res.once("end", () => {
        if (totalMs < 0) return reject(new Error("the stream ended without data: [DONE]"));
        if (ttftMs < 0) return reject(new Error("the stream carried no content"));
        const cache = res.headers["x-llm-gateway-cache"];
        resolve({ ttftMs, totalMs, cacheHit: typeof cache === "string" && cache.startsWith("hit") });
      });
    });
    request.end(body);
  });
}

export async function runStreams(command: RunCommand): Promise<RunResult> {
  const ttft: number[] = [];
  const total: number[] = [];
  const measureFrom = performance.now() + command.warmupMs;
  let firstError: string | undefined;
  let cacheHits = 0;
  let measuredSent = 0;
  let measuredEnded = 0;
  let finished = 0;
  const report = await runClosedLoop({
    concurrency: command.concurrency,
    spreadStartMs: command.spreadStartMs,
    durationMs: command.durationMs,
    warmupMs: command.warmupMs,
    requestTimeoutMs: STREAM_TIMEOUT_MS,
    task: async ({ index, signal }) => {
      const measuredOne = performance.now() >= measureFrom;
      if (measuredOne) measuredSent++;
      try {
        await phaseWait(index);
        const one = await oneStream(command, index, signal);
        if (performance.now() >= measureFrom) finished++;
        if (measuredOne) {
          ttft.push(one.ttftMs);
          total.push(one.totalMs);
          if (one.cacheHit) cacheHits++;
        }
      } catch (error) {
        firstError ??= error instanceof Error ? error.message : String(error);
        throw error;
      } finally {
        if (measuredOne) measuredEnded++;
      }
    },
  });
  const unfinished = measuredSent - measuredEnded;
  return {
    ok: report.ok,
    errors: report.errors,
    firstError,
    unfinished,
    finished,
    cacheHits,
    ttftMs: summaryMs(ttft),
    totalMs: summaryMs(total),
  };
}

if (import.meta.main) {
  process.stdout.write(`${JSON.stringify({ ready: true })}\n`);
  for await (const line of createInterface({ input: process.stdin })) {
    const command = JSON.parse(line) as RunCommand | { cmd: "close" };
    if (command.cmd === "close") break;
    const result = await runStreams(command);
    process.stdout.write(`${JSON.stringify(result)}\n`);
  }
  process.exit(0);
}
