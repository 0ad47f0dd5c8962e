/**
 * Graceful shutdown: stop accepting connections, let in-flight requests finish
 * (bounded by `drainTimeoutMs`), then close what the service holds — pools,
 * clients — in the reverse order it opened them, each bounded by `timeoutMs`.
 *
 * @example
 * const service = createService({ name: "feed", version, onClose: [() => pool.end()] });
 * await service.listen({ port: 8103 });
 * installSignalHandlers(service); // SIGTERM → drain → pool.end() → exit(0)
 */
import type { FastifyInstance } from "fastify";
import type { Logger } from "./logger.ts";

/** Releases one resource; may be sync or async. Its function name labels it in the logs. */
export type CloseHook = () => Promise<void> | void;

/** Fastify close with a bound: after `drainTimeoutMs` the remaining connections are cut. */
export async function drainServer(
  app: FastifyInstance,
  options: { drainTimeoutMs: number; log: Logger },
): Promise<{ forced: boolean }> {
  let forced = false;
  const timer = setTimeout(() => {
    forced = true;
    options.log.warn(
      { drainTimeoutMs: options.drainTimeoutMs },
      "drain timed out; closing the connections still in flight",
    );
    app.server.closeAllConnections();
  }, options.drainTimeoutMs);
  try {
    await app.close();
  } finally {
    clearTimeout(timer);
  }
  return { forced };
}

function hookName(hook: CloseHook, index: number): string {
  return hook.name || `onClose[${index}]`;
}

async function runBounded(hook: CloseHook, timeoutMs: number, name: string): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const timedOut = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(new Error(`close hook ${name} did not finish within ${timeoutMs} ms`)),
      timeoutMs,
    );
  });
  try {
    await Promise.race([Promise.resolve().then(hook), timedOut]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Runs `hooks` last-registered first (a pool opened after the cache it wraps
 * closes before it), each bounded by `timeoutMs`. A failing hook does not stop
 * the others: every resource gets its chance to close. Returns the failures.
 */
export async function runCloseHooks(
  hooks: readonly CloseHook[],
  options: { timeoutMs: number; log: Logger },
): Promise<Error[]> {
  const failures: Error[] = [];
  for (let index = hooks.length - 1; index >= 0; index--) {
    const hook = hooks[index]!;
    const name = hookName(hook, index);
    try {
      await runBounded(hook, options.timeoutMs, name);
      options.log.debug({ hook: name }, "close hook done");
    } catch (error) {
      const failure = error instanceof Error ? error : new Error(String(error));
      options.log.error({ err: failure, hook: name }, "close hook failed");
      failures.push(failure);
    }
  }
  return failures;
}

/** Where signals come from: `process`, or an EventEmitter in tests. */
export interface SignalSource {
  on(signal: NodeJS.Signals, listener: (signal: NodeJS.Signals) => void): unknown;
  off(signal: NodeJS.Signals, listener: (signal: NodeJS.Signals) => void): unknown;
}

export interface SignalOptions {
  /** Default SIGINT (Ctrl-C) and SIGTERM (orchestrators). */
  signals?: readonly NodeJS.Signals[];
  source?: SignalSource;
  /** Called with 0 after a clean close, 1 after a failed one or a second signal. Default process.exit. */
  exit?: (code: number) => void;
}

/**
 * On the first SIGINT/SIGTERM, closes the service once, then exits 0 (1 if the
 * close failed) — exiting explicitly because a forgotten timer or socket must
 * not keep a drained process alive. A second signal exits 1 at once: the
 * operator's "stop waiting". Returns a function that removes the handlers.
 *
 * @example
 * const uninstall = installSignalHandlers(service);
 */
export function installSignalHandlers(
  service: { close(): Promise<void>; log: Logger },
  options: SignalOptions = {},
): () => void {
  const signals = options.signals ?? ["SIGINT", "SIGTERM"];
  const source = options.source ?? process;
  const exit = options.exit ?? ((code: number) => process.exit(code));
  let received: NodeJS.Signals | undefined;
  const onSignal = (signal: NodeJS.Signals): void => {
    if (received !== undefined) {
      service.log.warn({ signal, first: received }, "second signal while closing; exiting without finishing");
      exit(1);
      return;
    }
    received = signal;
    service.log.info({ signal }, "signal received; closing");
    service.close().then(
      () => exit(0),
      (error: unknown) => {
        service.log.error({ err: error }, "close failed");
        exit(1);
      },
    );
  };
  for (const signal of signals) source.on(signal, onSignal);
  return () => {
    for (const signal of signals) source.off(signal, onSignal);
  };
}
