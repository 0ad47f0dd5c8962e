/**
 * One HTTP attempt as the worker records it (WH-08 Attempt, WH-16): the sender's answer or
 * typed failure turned into delivery-outcome's terms, plus what the attempt row keeps —
 * status, failing phase, a short error (a code, never a body or a secret: WH-22), start
 * time and duration.
 *
 * The sender bounds each phase (connect, headers, body); `deadlineMs` bounds the whole
 * request on top, because the lease was sized for it (lease ≥ deadline + headroom, checkLease):
 * an attempt must settle while its lease still holds, whatever the phase timeouts add up to.
 * When that bound fires the attempt is recorded as `timeout_deadline` and retried like any
 * timeout; the socket itself is closed by the sender's own phase timer soon after.
 *
 * @example
 * const sent = await sendAttempt(sender, { url, messageId, body, secrets }, { clock, deadlineMs: 30_000 });
 * decideOutcome({ result: sent.result, … });
 */
import type { Clock } from "@casebook/kit/clock";
import { attemptResultOf, type HttpSender, type OutgoingWebhook } from "../clients/http-sender.ts";
import type { AttemptResult } from "../domain/delivery-outcome.ts";

export interface SentAttempt {
  result: AttemptResult;
  /** Wall-clock start, for the attempt row. */
  startedAtMs: number;
  /** Wall-clock end: when the 2xx (or the failure) arrived. */
  finishedAtMs: number;
  durationMs: number;
  status: number | null;
  errorPhase: string | null;
  error: string | null;
  /** The whole-request deadline ended it, not the sender. */
  deadlineExceeded: boolean;
}

/** The response class recorded when the whole-request deadline ends an attempt. */
export const DEADLINE_RESPONSE_CLASS = "timeout_deadline";

function details(result: AttemptResult): Pick<SentAttempt, "status" | "errorPhase" | "error"> {
  switch (result.kind) {
    case "response":
      return { status: result.status, errorPhase: null, error: null };
    case "timeout":
      return { status: null, errorPhase: result.phase, error: `${result.phase} timeout` };
    case "connection_error":
      return { status: null, errorPhase: result.phase, error: result.code };
    case "dns_error":
      return { status: null, errorPhase: "dns", error: result.code };
    case "address_refused":
      return { status: null, errorPhase: "policy", error: `address refused: ${result.addressClass}` };
  }
}

/** A failure that is not one of the sender's typed ones is a bug: recorded as a connection error. */
function classified(outcome: unknown): AttemptResult {
  try {
    return attemptResultOf(outcome);
  } catch {
    return { kind: "connection_error", phase: "connect", code: "EINTERNAL" };
  }
}

/** Sends one attempt and classifies it; never rejects. */
export async function sendAttempt(
  sender: Pick<HttpSender, "send">,
  message: OutgoingWebhook,
  options: { clock: Clock; deadlineMs: number; onInternalError?: (error: unknown) => void },
): Promise<SentAttempt> {
  const { clock } = options;
  const startedAtMs = clock.nowMs();
  // Duration is real elapsed time whatever clock the worker runs on (a test's manual clock
  // stands still during a request); the row's start time is the worker's clock.
  const startedMono = performance.now();
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<"deadline">((resolve) => {
    timer = setTimeout(() => resolve("deadline"), options.deadlineMs);
  });
  const answered = sender.send(message).then(classified, (error: unknown) => {
    const result = classified(error);
    if (result.kind === "connection_error" && result.code === "EINTERNAL") options.onInternalError?.(error);
    return result;
  });
  const outcome = await Promise.race([answered, deadline]);
  clearTimeout(timer);
  const durationMs = Math.max(0, Math.round(performance.now() - startedMono));
  const finishedAtMs = clock.nowMs();
  if (outcome === "deadline") {
    return {
      result: { kind: "timeout", phase: "body" },
      startedAtMs,
      finishedAtMs,
      durationMs,
      status: null,
      errorPhase: "deadline",
      error: `no complete answer within ${options.deadlineMs} ms`,
      deadlineExceeded: true,
    };
  }
  return {
    result: outcome,
    startedAtMs,
    finishedAtMs,
    durationMs,
    ...details(outcome),
    deadlineExceeded: false,
  };
}
