/**
 * A push service simulator (CH-18, CH-21, CH-22): a real HTTP service on infra's simulator
 * base (like payments' acquirer simulator) standing in for SNS → APNs/FCM. It answers the
 * way those do where it matters to the caller: 200 with a message id for a live device
 * token; 410 `Unregistered` (APNs) / `UNREGISTERED` (FCM) for a token that is gone (the app
 * was uninstalled) — the caller must then forget the token; injected 5xx, latency, outages
 * and lost responses from the base. Tokens are declared gone through `/admin/tokens/gone`.
 * Every accepted push is kept (bounded) and listed at `/admin/pushes`, for tests.
 *
 * @example
 * const sim = createPushSim({ rng: seededRandom(1) });
 * const { url } = await sim.listen({ port: 0 });
 * await fetch(`${url}/v1/push`, { method: "POST", body: JSON.stringify({ platform: "fcm", token, title, body, data }) });
 */
import { createSimulator, faultKnobsSchemaProperties, type Simulator } from "@casebook/infra/http/simulator";
import { defaultFaultKnobs, type FaultKnobs, mergeFaultKnobs } from "@casebook/infra/http/simulator-faults";
import { type Clock, systemClock } from "@casebook/kit/clock";
import { defineErrors } from "@casebook/kit/errors";
import { type RandomSource, systemRandom } from "@casebook/kit/random";

export const MAX_PUSHES_KEPT = 10_000;

export const pushSimErrors = defineErrors({
  PUSH_TOKEN_GONE: {
    status: 410,
    message: "Unregistered: the device token is no longer valid; stop sending to it.",
  },
  PUSH_PROVIDER_FAILED: { status: 502, message: "The push provider failed; retry later." },
  PUSH_SIM_OUTAGE: { status: 503, message: "The push service is unavailable; retry later." },
});

export interface SimPush {
  readonly id: string;
  readonly platform: "apns" | "fcm";
  readonly token: string;
  readonly title: string;
  readonly body: string;
  readonly data: Record<string, string>;
  readonly atMs: number;
}

class PushState {
  readonly gone = new Set<string>();
  readonly pushes: SimPush[] = [];
  sent = 0;
  refusedGone = 0;

  reset(): void {
    this.gone.clear();
    this.pushes.length = 0;
    this.sent = 0;
    this.refusedGone = 0;
  }
}

const pushBody = {
  type: "object",
  required: ["platform", "token", "title", "body"],
  additionalProperties: false,
  properties: {
    platform: { type: "string", enum: ["apns", "fcm"] },
    token: { type: "string", minLength: 8, maxLength: 256 },
    title: { type: "string", maxLength: 200 },
    body: { type: "string", maxLength: 4_000 },
    data: { type: "object", additionalProperties: { type: "string", maxLength: 200 }, maxProperties: 16 },
  },
} as const;

export interface PushSim extends Simulator<FaultKnobs> {
  readonly state: PushState;
}

export function createPushSim(
  options: { clock?: Clock; rng?: RandomSource; log?: { level: "silent" | "info" | "warn" } } = {},
): PushSim {
  const clock = options.clock ?? systemClock;
  const state = new PushState();
  let ids = 0;
  const sim = createSimulator<FaultKnobs>({
    name: "push-sim",
    version: "0.1.0",
    description:
      "Push service simulator for chat (seed 000 §2, correction 6): APNs/FCM-like answers, tokens that go away, injected faults",
    metricPrefix: "push_sim",
    clock,
    rng: options.rng ?? systemRandom,
    behaviour: {
      initial: defaultFaultKnobs,
      merge: mergeFaultKnobs,
      knobs: (b) => b,
      schema: { type: "object", additionalProperties: false, properties: faultKnobsSchemaProperties },
    },
    stats: () => ({ sent: state.sent, refusedGone: state.refusedGone, goneTokens: state.gone.size }),
    reset: () => state.reset(),
    routes: (v1, faults) => {
      v1.post<{
        Body: {
          platform: "apns" | "fcm";
          token: string;
          title: string;
          body: string;
          data?: Record<string, string>;
        };
      }>(
        "/v1/push",
        {
          config: { mutating: true },
          schema: {
            summary: "Send one push notification to one device token",
            tags: ["push"],
            body: pushBody,
          },
        },
        async (request, reply) => {
          const { token, platform } = request.body;
          if (state.gone.has(token)) {
            state.refusedGone++;
            const reason = platform === "apns" ? "Unregistered" : "UNREGISTERED";
            throw pushSimErrors.create("PUSH_TOKEN_GONE", { fields: { reason } });
          }
          const push: SimPush = { id: `push-${++ids}`, data: {}, ...request.body, atMs: clock.nowMs() };
          state.pushes.push(push);
          if (state.pushes.length > MAX_PUSHES_KEPT) state.pushes.shift();
          state.sent++;
          return faults.respond(request, reply, { id: push.id });
        },
      );
    },
    adminRoutes: (admin) => {
      admin.post<{ Body: { token: string } }>(
        "/admin/tokens/gone",
        {
          schema: {
            summary: "Declare a device token gone (uninstalled app): its pushes answer 410 from now on",
            body: {
              type: "object",
              required: ["token"],
              additionalProperties: false,
              properties: { token: { type: "string", minLength: 1 } },
            },
          },
        },
        async (request) => {
          state.gone.add(request.body.token);
          return { gone: state.gone.size };
        },
      );
      admin.get<{ Querystring: { token?: string } }>(
        "/admin/pushes",
        { schema: { summary: "The pushes accepted (the newest 10,000), optionally for one token" } },
        async (request) => ({
          pushes: state.pushes.filter(
            (p) => request.query.token === undefined || p.token === request.query.token,
          ),
        }),
      );
    },
    errorFor: () => pushSimErrors.create("PUSH_PROVIDER_FAILED"),
    outageError: () => pushSimErrors.create("PUSH_SIM_OUTAGE"),
    errors: [pushSimErrors],
    log: options.log ?? { level: "info" },
  });
  return { ...sim, state };
}
