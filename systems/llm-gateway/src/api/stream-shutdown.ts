/**
 * LG-15's end of the drain: a gateway stopping waits for its open streams (infra's bounded
 * drain), but a stream still open when that bound is about to pass must not be cut silently
 * — a client reading a cut connection cannot tell it from a whole answer that lost its
 * `[DONE]`. Every open stream is tracked here; `cutAfter` (armed when the service starts
 * closing) ends each still open a margin before infra's drain bound closes the sockets, with
 * an error event the client's SDK throws (`llm_gateway_shutting_down`) and the provider's
 * request closed, so what was generated is settled and recorded as a failure.
 *
 * @example
 * const shutdown = new StreamShutdown();
 * const untrack = shutdown.track(() => controller.abort());   // per stream; untrack() at its end
 * app.addHook("preClose", () => shutdown.cutAfter(drainTimeoutMs));
 */

/** The lead the cut takes on the drain bound: time to write the error event before the sockets close. */
export function cutLeadMs(drainTimeoutMs: number): number {
  return Math.min(1_000, Math.floor(drainTimeoutMs / 5));
}

export class StreamShutdown {
  readonly #open = new Set<() => void>();
  #timer: NodeJS.Timeout | undefined;
  #cut = false;

  /** Registers one open stream's cut; returns its untrack (call it when the stream ends). */
  track(cut: () => void): () => void {
    if (this.#cut) {
      // Opened after the cut (a request in flight when it fired): cut at once.
      queueMicrotask(cut);
      return () => {};
    }
    this.#open.add(cut);
    return () => {
      this.#open.delete(cut);
    };
  }

  get openStreams(): number {
    return this.#open.size;
  }

  /** Arms the cut `cutLeadMs` before `drainTimeoutMs` from now; once armed, later calls do nothing. */
  cutAfter(drainTimeoutMs: number): void {
    if (this.#timer !== undefined || this.#cut) return;
    this.#timer = setTimeout(() => this.cutNow(), drainTimeoutMs - cutLeadMs(drainTimeoutMs));
    this.#timer.unref();
  }

  /** Cuts every stream still open (each gets its error event). */
  cutNow(): void {
    clearTimeout(this.#timer);
    this.#cut = true;
    for (const cut of [...this.#open]) cut();
    this.#open.clear();
  }
}
