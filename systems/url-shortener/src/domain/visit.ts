/**
 * A visit of a short URL as the redirect path hands it on (US-15): what the click record needs,
 * taken from the request with no I/O. `record` must return at once — it is called on the
 * redirect path, which never waits for a database (the sink buffers, workers/click-flusher.ts
 * writes in batches). Its arguments are positional, not a `Visit` object: the redirect runs
 * tens of thousands of times a second and an object per request is garbage the collector
 * pays for on the same thread (issue 18's profile); the buffer stores the fields in columns.
 */
export interface Visit {
  readonly atMs: number;
  readonly domain: string;
  /** The code asked for; for an orphan visit, whatever was asked (or "" for the base domain). */
  readonly code: string;
  /** The answer: a 3xx for a click, 404/410 for an orphan visit. */
  readonly status: number;
  readonly referrer: string | undefined;
  readonly userAgent: string | undefined;
  /** The client address, only to derive the privacy-safe visitor hash; never stored. */
  readonly ip: string;
  /** How many identical clicks (same fields, same second) this visit stands for: 1 when absent (click-buffer.ts folds repeats). */
  readonly count?: number;
}

export interface VisitSink {
  record(
    atMs: number,
    domain: string,
    code: string,
    status: number,
    referrer: string | undefined,
    userAgent: string | undefined,
    ip: string,
  ): void;
}

/** Hands a `Visit` object to a sink (tests, and paths far off the redirect's). */
export function recordVisit(sink: VisitSink, visit: Visit): void {
  sink.record(visit.atMs, visit.domain, visit.code, visit.status, visit.referrer, visit.userAgent, visit.ip);
}

/** A sink that keeps nothing: click capture off. */
export const noVisits: VisitSink = { record() {} };
