/**
 * What the provider simulator has done since its last reset: counters (GET /admin/stats,
 * the operations gauge) and the last streams it served (GET /admin/streams), each with how
 * many tokens it generated and how it ended. LG-04 is proven here: a stream the client
 * abandoned ends `client-closed`, and its `generatedTokens` says how many tokens the
 * provider produced — and a real one would bill — in all.
 */
import { PromptPrefixCache } from "./prompt-cache.ts";

export type StreamEnd = "done" | "client-closed" | "cut" | "open";
export type Wire = "openai" | "anthropic";

export interface StreamRecord {
  readonly id: string;
  readonly model: string;
  readonly wire: Wire;
  readonly stream: boolean;
  readonly promptTokens: number;
  generatedTokens: number;
  end: StreamEnd;
}

/** Streams remembered for /admin/streams: the last ones, a test looks at a handful. */
export const maxStreamRecords = 1_000;

export interface ProviderCounters {
  requests: number;
  completions: number;
  streams: number;
  openStreams: number;
  inputTokens: number;
  outputTokens: number;
  rateLimited: number;
  modelErrors: number;
  cuts: number;
  clientCloses: number;
  /** Texts embedded at /v1/embeddings. */
  embeddings: number;
}

function zero(): ProviderCounters {
  return {
    requests: 0,
    completions: 0,
    streams: 0,
    openStreams: 0,
    inputTokens: 0,
    outputTokens: 0,
    rateLimited: 0,
    modelErrors: 0,
    cuts: 0,
    clientCloses: 0,
    embeddings: 0,
  };
}

export class ProviderState {
  /** The provider's prompt (prefix) caching (LG-13). */
  readonly promptCache = new PromptPrefixCache();
  #counters = zero();
  #records: StreamRecord[] = [];
  #nextId = 1;

  nextId(prefix: string): string {
    return `${prefix}${(this.#nextId++).toString().padStart(8, "0")}`;
  }

  get counters(): Readonly<ProviderCounters> {
    return this.#counters;
  }

  stats(): Record<string, number> {
    return { ...this.#counters };
  }

  count(name: keyof ProviderCounters, by = 1): void {
    this.#counters[name] += by;
  }

  /** Starts a generation's record (bounded: the oldest is forgotten). */
  open(record: Omit<StreamRecord, "generatedTokens" | "end">): StreamRecord {
    const full: StreamRecord = { ...record, generatedTokens: 0, end: "open" };
    this.#records.push(full);
    if (this.#records.length > maxStreamRecords) this.#records.shift();
    this.#counters.requests += 1;
    this.#counters.inputTokens += record.promptTokens;
    if (record.stream) {
      this.#counters.streams += 1;
      this.#counters.openStreams += 1;
    }
    return full;
  }

  /** One token generated on `record`'s answer. */
  generated(record: StreamRecord): void {
    record.generatedTokens += 1;
    this.#counters.outputTokens += 1;
  }

  close(record: StreamRecord, end: Exclude<StreamEnd, "open">): void {
    if (record.end !== "open") return;
    record.end = end;
    if (record.stream) this.#counters.openStreams = Math.max(0, this.#counters.openStreams - 1);
    if (end === "done") this.#counters.completions += 1;
    if (end === "cut") this.#counters.cuts += 1;
    if (end === "client-closed") this.#counters.clientCloses += 1;
  }

  /** The last `limit` records, newest last. */
  records(limit: number): readonly StreamRecord[] {
    return this.#records.slice(-limit).map((record) => ({ ...record }));
  }

  reset(): void {
    this.promptCache.clear();
    this.#counters = zero();
    this.#records = [];
  }
}
