/**
 * Carries out the failure plans of acquirer-behaviour.ts on real HTTP: latency,
 * errors before processing (500/502/503, nothing charged), outages (503 or a reset
 * connection) and, the case the payments design turns on (PY-06), a call that IS
 * processed but whose response never arrives — the socket is held past any client
 * timeout, or destroyed at once.
 *
 * @example
 * const faults = new FaultInjector({ rng: seededRandom(1) });
 * faults.install(v1);                       // hooks on the /v1 scope
 * v1.post("/v1/things", { config: { mutating: true } }, async (request, reply) => {
 *   const body = doTheWork();               // charged now, whatever happens next
 *   return faults.respond(request, reply, body);
 * });
 */
import type { Socket } from "node:net";
import { setTimeout as sleepMs } from "node:timers/promises";
import type { RandomSource } from "@casebook/kit/random";
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import {
  type Behaviour,
  type CallPlan,
  defaultBehaviour,
  mergeBehaviour,
  planCall,
} from "./acquirer-behaviour.ts";
import { acquirerErrors } from "./acquirer-errors.ts";

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

export interface FaultInjectorOptions {
  rng: RandomSource;
  /** The knobs at start and after a reset. */
  initial?: Behaviour;
  sleep?: Sleep;
}

/** Retry-After of a simulated outage: the caller's breaker decides, this only hints. */
const outageRetryAfterMs = 1_000;

const errorCodeByStatus = {
  500: "ACQUIRER_INTERNAL_FAILURE",
  502: "ACQUIRER_UPSTREAM_FAILED",
  503: "ACQUIRER_OVERLOADED",
} as const;

function emptyCounters(): Omit<FaultCounters, "heldSockets"> {
  return { delayedCalls: 0, errors: 0, outageRefusals: 0, connectionResets: 0, responsesLost: 0 };
}

function isMutating(request: FastifyRequest): boolean {
  return (request.routeOptions.config as { mutating?: boolean } | undefined)?.mutating === true;
}

export class FaultInjector {
  readonly #rng: RandomSource;
  readonly #initial: Behaviour;
  readonly #sleep: Sleep;
  readonly #plans = new WeakMap<FastifyRequest, CallPlan>();
  /** Sockets held open by "hang" faults, each with the timer that cuts it: released on close. */
  readonly #held = new Map<Socket, NodeJS.Timeout>();
  #behaviour: Behaviour;
  #counters = emptyCounters();

  constructor(options: FaultInjectorOptions) {
    this.#rng = options.rng;
    this.#initial = options.initial ?? defaultBehaviour;
    this.#behaviour = this.#initial;
    this.#sleep = options.sleep ?? ((ms, signal) => sleepMs(ms, undefined, { signal }));
  }

  get behaviour(): Behaviour {
    return this.#behaviour;
  }

  /** Replaces the given knobs; throws RangeError naming a knob out of bounds. */
  update(patch: Partial<Behaviour>): Behaviour {
    this.#behaviour = mergeBehaviour(this.#behaviour, patch);
    return this.#behaviour;
  }

  /** Back to the initial knobs and zero counters; held sockets are cut. */
  reset(): void {
    this.#behaviour = this.#initial;
    this.#counters = emptyCounters();
    this.releaseHeld();
  }

  counters(): FaultCounters {
    return { heldSockets: this.#held.size, ...this.#counters };
  }

  /** Hooks on a scope whose routes simulate the acquirer (never on admin or ops routes). */
  install(scope: FastifyInstance): void {
    // Outage first, before validation: a down acquirer refuses whatever it is sent.
    scope.addHook("onRequest", async (request, reply) => {
      if (this.#behaviour.outage) this.#refuse(request, reply, this.#behaviour.outageMode);
    });
    scope.addHook("preHandler", async (request, reply) => {
      const plan = planCall(this.#behaviour, this.#rng, { mutating: isMutating(request) });
      if (plan.fault.kind === "outage") return this.#refuse(request, reply, plan.fault.mode);
      if (plan.delayMs > 0) {
        this.#counters.delayedCalls += 1;
        await this.#sleep(plan.delayMs, clientGone(reply));
      }
      if (plan.fault.kind === "error") {
        this.#counters.errors += 1;
        throw acquirerErrors.create(errorCodeByStatus[plan.fault.status]);
      }
      this.#plans.set(request, plan);
    });
  }

  #refuse(request: FastifyRequest, reply: FastifyReply, mode: Behaviour["outageMode"]): void {
    if (mode === "reset") {
      this.#counters.connectionResets += 1;
      reply.hijack();
      request.raw.socket.destroy();
      return;
    }
    this.#counters.outageRefusals += 1;
    throw acquirerErrors.create("ACQUIRER_OUTAGE", { fields: { retryAfterMs: outageRetryAfterMs } });
  }

  /**
   * The response to send, or — when this call's plan says its response is lost —
   * the hijacked reply: the work is done (charged), the caller never hears so.
   */
  respond<T>(request: FastifyRequest, reply: FastifyReply, body: T): T | FastifyReply {
    const plan = this.#plans.get(request);
    if (plan?.fault.kind !== "timeout-after-charge") return body;
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
