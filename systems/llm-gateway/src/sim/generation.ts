/**
 * The simulated model generating an answer, at the pace of its profile: the time to first
 * token, then `tokensPerS`, with an optional pause and an optional cut. Each token is handed
 * to `emit` as soon as it is due (never batched into one write: LG-01 needs the gateway to
 * see them one by one). The loop checks the connection before every token: when the client
 * has gone it stops, which is what closing the upstream connection buys (LG-04).
 *
 * @example
 * const outcome = await generate({ profile, tokens, isClosed: () => socket.destroyed, emit: (t) => write(t), sleep, clock });
 * outcome; // { end: "done", generated: 40 } | { end: "client-closed", generated: 7 } | { end: "cut", … }
 */
import type { Clock } from "@casebook/kit/clock";
import type { ModelProfile } from "./provider-behaviour.ts";

export interface GenerationIo {
  readonly profile: ModelProfile;
  /** The answer, one token per entry. */
  readonly tokens: readonly string[];
  /** True once the client's connection is gone. */
  isClosed(): boolean;
  /** Called once, when the first token is due (before it): a stream writes its opening events here. */
  first?(): void;
  /** One token generated (counted by the provider, billed by a real one) and handed on. */
  emit(token: string): void;
  /** Sleeps; rejects (or resolves early) when the connection closes. */
  sleep(ms: number): Promise<void>;
  readonly clock: Clock;
}

export interface GenerationOutcome {
  readonly end: "done" | "client-closed" | "cut";
  readonly generated: number;
}

export async function generate(io: GenerationIo): Promise<GenerationOutcome> {
  const { profile, tokens, clock } = io;
  const msPerToken = 1000 / profile.tokensPerS;
  await io.sleep(profile.ttftMs).catch(() => {});
  if (io.isClosed()) return { end: "client-closed", generated: 0 };
  io.first?.();
  let startedAtMs = clock.monotonicMs();
  for (let i = 0; i < tokens.length; i++) {
    if (io.isClosed()) return { end: "client-closed", generated: i };
    if (profile.cutAfterTokens > 0 && i === profile.cutAfterTokens) return { end: "cut", generated: i };
    if (profile.pauseAfterTokens > 0 && i === profile.pauseAfterTokens && profile.pauseMs > 0) {
      await io.sleep(profile.pauseMs).catch(() => {});
      // The pause does not count against the pace: the next token is due at once.
      startedAtMs = clock.monotonicMs() - i * msPerToken;
      if (io.isClosed()) return { end: "client-closed", generated: i };
    }
    const dueInMs = startedAtMs + i * msPerToken - clock.monotonicMs();
    if (dueInMs >= 1) {
      await io.sleep(dueInMs).catch(() => {});
      if (io.isClosed()) return { end: "client-closed", generated: i };
    }
    io.emit(tokens[i] as string);
  }
  return { end: "done", generated: tokens.length };
}
