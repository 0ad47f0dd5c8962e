/**
 * Fault injection for simulators of outside services (a card acquirer, a push
 * service, an LLM provider): the failures a caller of a remote service must survive,
 * carried out on real HTTP so the caller's real client meets them.
 *
 * - latency (+ seeded jitter) before the call is processed;
 * - an error (500/502/503 problem) BEFORE processing: nothing was done;
 * - an outage: every faulted call refused (503 + Retry-After) or its connection reset,
 *   before validation (a down service refuses whatever it is sent);
 * - a lost response, the case at-most-once designs turn on: the call IS processed
 *   (charged, sent) and its response never arrives — the socket is held past any
 *   client timeout (`hang`), or destroyed at once (`reset`);
 * - a schedule: the exact faults of the next calls, in order (`[error 503, none,
 *   lost-response]`), for a test that needs "the second retry succeeds" without
 *   searching for a seed. Taken before the random knobs; an empty schedule leaves
 *   them in charge.
 *
 * The draw (`planFaults`) is pure and seeded: a random number is drawn only for a knob
 * that is on, so turning one knob on does not shift the sequence another knob sees,
 * and the same seed with the same calls gives the same run.
 *
 * A route opts into lost responses with `config: { mutating: true }` and answers
 * through `faults.respond(request, reply, body)`; every route of the scope the
 * injector is installed on gets latency, errors and outages.
 *
 * @example
 * const faults = new FaultInjector({ rng: seededRandom(1), initial: defaultFaultKnobs, merge: mergeFaultKnobs, knobs: (b) => b });
 * faults.install(v1);
 * v1.post("/v1/messages", { config: { mutating: true } }, async (request, reply) => {
 *   const body = send(request.body); // done now, whatever happens next
 *   return faults.respond(request, reply, body);
 * });
 */
import type { Socket } from "node:net";
import { setTimeout as sleepMs } from "node:timers/promises";
import { type CasebookError, defineErrors } from "@casebook/kit/errors";
import { int, pick, type RandomSource } from "@casebook/kit/random";
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";

/**
 * The failures a simulator answers with when it names none of its own (register them
 * with the service: `errors: [simulatorErrors]`). Kept out of `httpErrors` so only
 * simulators list them in their OpenAPI.
 */
export const simulatorErrors = defineErrors({
  SIMULATED_OUTAGE: {
    status: 503,
    message: "The service is down (simulated outage); retry later.",
  },
  SIMULATED_UPSTREAM_FAILED: {
    status: 502,
    message: "An upstream failed before the call was processed (simulated); retry.",
  },
  SIMULATED_INTERNAL_FAILURE: {
    status: 500,
    message: "The service failed before the call was processed (simulated); retry.",
  },
  SIMULATED_OVERLOADED: {
    status: 503,
    message: "The service is overloaded (simulated) and did nothing; retry with backoff.",
  },
});

declare module "fastify" {
  interface FastifyContextConfig {
    /** The route changes state: a lost-response fault may hit it (see above). */
    mutating?: boolean;
  }
}

export type LostResponseMode = "hang" | "reset";
export type OutageMode = "refuse" | "reset";
export type ErrorStatus = 500 | 502 | 503;
export const ERROR_STATUSES: readonly ErrorStatus[] = [500, 502, 503];

/** The generic fault knobs every simulator has. */
export interface FaultKnobs {
  /** Added to every faulted call before it is processed. */
  readonly latencyMs: number;
  /** Up to this much more, uniform. */
  readonly latencyJitterMs: number;
  /** Probability a call fails with 500/502/503 BEFORE doing anything. */
  readonly errorRate: number;
  /** Probability a mutating call is DONE but its response never arrives. */
  readonly lostResponseRate: number;
  /** hang: hold the socket `hangMs`, then cut it; reset: cut it at once. */
  readonly lostResponseMode: LostResponseMode;
  /** How long a hung response holds its socket: longer than any sane client timeout. */
  readonly hangMs: number;
  /** While true every faulted call is refused (503) or its connection reset, per `outageMode`. */
  readonly outage: boolean;
  readonly outageMode: OutageMode;
}

export const defaultFaultKnobs: FaultKnobs = Object.freeze({
  latencyMs: 0,
  latencyJitterMs: 0,
  errorRate: 0,
  lostResponseRate: 0,
  lostResponseMode: "hang",
  hangMs: 60_000,
  outage: false,
  outageMode: "refuse",
});

/** Bounds of each numeric fault knob, for a simulator's JSON schema and its merge. */
export const faultKnobBounds = {
  latencyMs: { min: 0, max: 60_000 },
  latencyJitterMs: { min: 0, max: 60_000 },
  errorRate: { min: 0, max: 1 },
  lostResponseRate: { min: 0, max: 1 },
  hangMs: { min: 1, max: 600_000 },
} as const;

/** `current` with `patch` applied; throws RangeError naming a numeric knob out of bounds. */
export function mergeFaultKnobs<K extends FaultKnobs>(current: K, patch: Partial<K>): K {
  const next: K = { ...current, ...patch };
  checkBounds(next, faultKnobBounds);
  return Object.freeze(next);
}

/** Throws RangeError naming the first knob of `bounds` whose value in `knobs` is not a number inside them. */
export function checkBounds(
  knobs: object,
  bounds: Readonly<Record<string, { min: number; max: number }>>,
): void {
  for (const [knob, { min, max }] of Object.entries(bounds)) {
    const value = (knobs as Record<string, unknown>)[knob] as number;
    if (!(Number.isFinite(value) && value >= min && value <= max)) {
      throw new RangeError(`${knob} must be a number in [${min}, ${max}], got ${value}`);
    }
  }
}

export type CallFault =
  | { readonly kind: "none" }
  | { readonly kind: "outage"; readonly mode: OutageMode }
  | { readonly kind: "error"; readonly status: ErrorStatus }
  | { readonly kind: "lost-response"; readonly mode: LostResponseMode; readonly hangMs: number };

export interface CallPlan {
  readonly delayMs: number;
  readonly fault: CallFault;
}

/**
 * What happens to one call: refused by an outage (decided first, without latency: a
 * down service answers or resets fast), otherwise delayed, then failed before
 * processing, or processed with its response lost (mutating calls only).
 */
export function planFaults(knobs: FaultKnobs, rng: RandomSource, options: { mutating: boolean }): CallPlan {
  if (knobs.outage) return { delayMs: 0, fault: { kind: "outage", mode: knobs.outageMode } };
  const delayMs = knobs.latencyMs + (knobs.latencyJitterMs > 0 ? int(rng, knobs.latencyJitterMs + 1) : 0);
  if (knobs.errorRate > 0 && rng.next() < knobs.errorRate) {
    return { delayMs, fault: { kind: "error", status: pick(rng, ERROR_STATUSES) } };
  }
  if (options.mutating && knobs.lostResponseRate > 0 && rng.next() < knobs.lostResponseRate) {
    return { delayMs, fault: { kind: "lost-response", mode: knobs.lostResponseMode, hangMs: knobs.hangMs } };
  }
  return { delayMs, fault: { kind: "none" } };
}

/** One entry of a fault schedule: the plan of one upcoming call (`mode`/`hangMs` default to the knobs'). */
export interface ScheduledFault {
  readonly kind: CallFault["kind"];
  readonly delayMs?: number;
  readonly status?: ErrorStatus;
  readonly mode?: LostResponseMode | OutageMode;
  readonly hangMs?: number;
}

/** Bound on scheduled faults: a test scripts a handful of calls, not a million. */
export const maxScheduledFaults = 1_000;

/** JSON schema of `PUT /admin/faults/schedule`. */
export const faultScheduleSchema = {
  type: "object",
  required: ["faults"],
  additionalProperties: false,
  properties: {
    faults: {
      type: "array",
      maxItems: maxScheduledFaults,
      items: {
        type: "object",
        required: ["kind"],
        additionalProperties: false,
        properties: {
          kind: { type: "string", enum: ["none", "outage", "error", "lost-response"] },
          delayMs: { type: "integer", minimum: 0, maximum: faultKnobBounds.latencyMs.max },
          status: { type: "integer", enum: [...ERROR_STATUSES] },
          mode: { type: "string", enum: ["hang", "reset", "refuse"] },
          hangMs: {
            type: "integer",
            minimum: faultKnobBounds.hangMs.min,
            maximum: faultKnobBounds.hangMs.max,
          },
        },
      },
    },
  },
} as const;

/** Waits `ms`; rejects when `signal` aborts. Injected in tests to observe the delays without waiting. */
export type Sleep = (ms: number, signal?: AbortSignal) => Promise<void>;

export interface FaultCounters {
  /** Sockets held open right now by "hang" faults. */
  heldSockets: number;
  delayedCalls: number;
  errors: number;
  outageRefusals: number;
  connectionResets: number;
  responsesLost: number;
}

export interface FaultInjectorOptions<B> {
  rng: RandomSource;
  /** The behaviour (fault knobs and the simulator's own) at start and after a reset. */
  initial: B;
  /** `current` with `patch` applied; throws RangeError naming a knob out of bounds. */
  merge(current: B, patch: Partial<B>): B;
  /** The fault knobs of a behaviour (a simulator may name them its own way in its API). */
  knobs(behaviour: B): FaultKnobs;
  /** The error an `error` fault throws; default the `SIMULATED_*` codes. */
  errorFor?(status: ErrorStatus): CasebookError;
  /** The error an outage refuses with; default SIMULATED_OUTAGE. Give it `retryAfterMs`. */
  outageError?(): CasebookError;
  sleep?: Sleep;
}

/** Retry-After of a simulated outage: the caller's breaker decides, this only hints. */
export const outageRetryAfterMs = 1_000;

const defaultErrorCodes = {
  500: "SIMULATED_INTERNAL_FAILURE",
  502: "SIMULATED_UPSTREAM_FAILED",
  503: "SIMULATED_OVERLOADED",
} as const;

function emptyCounters(): Omit<FaultCounters, "heldSockets"> {
  return { delayedCalls: 0, errors: 0, outageRefusals: 0, connectionResets: 0, responsesLost: 0 };
}

function isMutating(request: FastifyRequest): boolean {
  return (request.routeOptions.config as { mutating?: boolean } | undefined)?.mutating === true;
}

/**
 * Aborts when the client goes away before the response is written. Not `request.signal`:
 * with a handler timeout Fastify 5 aborts that one on the request's 'close', which Node
 * emits as soon as the body has been read — every delayed call became a 500.
 */
function clientGone(reply: FastifyReply): AbortSignal {
  const controller = new AbortController();
  reply.raw.once("close", () => {
    if (!reply.raw.writableFinished) controller.abort();
  });
  return controller.signal;
}

/** Carries out fault plans on the routes of one Fastify scope; holds the behaviour, schedule and counters. */
export class FaultInjector<B> {
  readonly #rng: RandomSource;
  readonly #initial: B;
  readonly #merge: (current: B, patch: Partial<B>) => B;
  readonly #knobsOf: (behaviour: B) => FaultKnobs;
  readonly #errorFor: (status: ErrorStatus) => CasebookError;
  readonly #outageError: () => CasebookError;
  readonly #sleep: Sleep;
  readonly #plans = new WeakMap<FastifyRequest, CallPlan>();
  /** Sockets held open by "hang" faults, each with the timer that cuts it: released on close. */
  readonly #held = new Map<Socket, NodeJS.Timeout>();
  #behaviour: B;
  #knobs: FaultKnobs;
  #schedule: ScheduledFault[] = [];
  #counters = emptyCounters();

  constructor(options: FaultInjectorOptions<B>) {
    this.#rng = options.rng;
    this.#initial = options.initial;
    this.#merge = options.merge;
    this.#knobsOf = options.knobs;
    this.#errorFor = options.errorFor ?? ((status) => simulatorErrors.create(defaultErrorCodes[status]));
    this.#outageError =
      options.outageError ??
      (() => simulatorErrors.create("SIMULATED_OUTAGE", { fields: { retryAfterMs: outageRetryAfterMs } }));
    this.#behaviour = this.#initial;
    this.#knobs = this.#knobsOf(this.#initial);
    this.#sleep = options.sleep ?? ((ms, signal) => sleepMs(ms, undefined, { signal }));
  }

  get behaviour(): B {
    return this.#behaviour;
  }

  /** Replaces the given knobs; throws RangeError naming a knob out of bounds. */
  update(patch: Partial<B>): B {
    this.#behaviour = this.#merge(this.#behaviour, patch);
    this.#knobs = this.#knobsOf(this.#behaviour);
    return this.#behaviour;
  }

  /** The exact faults of the next calls, in order (replaces any schedule left). */
  schedule(faults: readonly ScheduledFault[]): void {
    if (faults.length > maxScheduledFaults) {
      throw new RangeError(`a schedule holds at most ${maxScheduledFaults} faults, got ${faults.length}`);
    }
    this.#schedule = [...faults];
  }

  /** The scheduled faults not taken yet. */
  scheduled(): readonly ScheduledFault[] {
    return [...this.#schedule];
  }

  /** Back to the initial knobs, an empty schedule and zero counters; held sockets are cut. */
  reset(): void {
    this.#behaviour = this.#initial;
    this.#knobs = this.#knobsOf(this.#initial);
    this.#schedule = [];
    this.#counters = emptyCounters();
    this.releaseHeld();
  }

  counters(): FaultCounters {
    return { heldSockets: this.#held.size, ...this.#counters };
  }

  /** Hooks on a scope whose routes simulate the service (never on admin or ops routes). */
  install(scope: FastifyInstance): void {
    // Outage first, before validation: a down service refuses whatever it is sent.
    scope.addHook("onRequest", async (request, reply) => {
      if (this.#knobs.outage) this.#refuse(request, reply, this.#knobs.outageMode);
    });
    scope.addHook("preHandler", async (request, reply) => {
      const plan = this.#plan(isMutating(request));
      if (plan.fault.kind === "outage") return this.#refuse(request, reply, plan.fault.mode);
      if (plan.delayMs > 0) {
        this.#counters.delayedCalls += 1;
        await this.#sleep(plan.delayMs, clientGone(reply));
      }
      if (plan.fault.kind === "error") {
        this.#counters.errors += 1;
        throw this.#errorFor(plan.fault.status);
      }
      this.#plans.set(request, plan);
    });
  }

  /** The schedule's next entry if there is one this call can take, else the knobs' draw. */
  #plan(mutating: boolean): CallPlan {
    const next = this.#schedule[0];
    // A lost response needs a mutating call: the entry waits for one, the call goes on unfaulted.
    if (next === undefined) return planFaults(this.#knobs, this.#rng, { mutating });
    if (next.kind === "lost-response" && !mutating) return { delayMs: 0, fault: { kind: "none" } };
    this.#schedule.shift();
    return { delayMs: next.delayMs ?? 0, fault: this.#scheduledFault(next) };
  }

  #scheduledFault(entry: ScheduledFault): CallFault {
    switch (entry.kind) {
      case "none":
        return { kind: "none" };
      case "error":
        return { kind: "error", status: entry.status ?? 503 };
      case "outage":
        return { kind: "outage", mode: entry.mode === "reset" ? "reset" : "refuse" };
      case "lost-response":
        return {
          kind: "lost-response",
          mode:
            entry.mode === "reset" ? "reset" : entry.mode === "hang" ? "hang" : this.#knobs.lostResponseMode,
          hangMs: entry.hangMs ?? this.#knobs.hangMs,
        };
    }
  }

  #refuse(request: FastifyRequest, reply: FastifyReply, mode: OutageMode): void {
    if (mode === "reset") {
      this.#counters.connectionResets += 1;
      reply.hijack();
      request.raw.socket.destroy();
      return;
    }
    this.#counters.outageRefusals += 1;
    throw this.#outageError();
  }

  /**
   * The response to send, or — when this call's plan says its response is lost —
   * the hijacked reply: the work is done, the caller never hears so.
   */
  respond<T>(request: FastifyRequest, reply: FastifyReply, body: T): T | FastifyReply {
    const plan = this.#plans.get(request);
    if (plan?.fault.kind !== "lost-response") return body;
    this.#counters.responsesLost += 1;
    request.log.info({ mode: plan.fault.mode }, "simulated fault: processed, response lost");
    reply.hijack();
    const socket = request.raw.socket;
    if (plan.fault.mode === "reset") {
      socket.destroy();
      return reply;
    }
    const timer = setTimeout(() => socket.destroy(), plan.fault.hangMs);
    this.#held.set(socket, timer);
    socket.once("close", () => {
      clearTimeout(timer);
      this.#held.delete(socket);
    });
    return reply;
  }

  /** Cuts every socket held by a "hang" fault: call it before a graceful close, whose drain would wait for them. */
  releaseHeld(): void {
    for (const [socket, timer] of this.#held) {
      clearTimeout(timer);
      socket.destroy();
    }
    this.#held.clear();
  }
}
