/**
 * The waiting room's routes (FS-13, FS-20), split as AWS VWR splits them:
 *
 *   POST /v1/sales/{saleId}/entrants                 join: a position (or the pre-queue) and, once, the entrant's secret
 *   GET  /v1/sales/{saleId}/room                     the global "serving up to P": the same for everyone, cacheable 1 s
 *   POST /v1/sales/{saleId}/entrants/{user}/admission  per entrant, never cached: its position, ahead, estimated
 *                                                      wait — or, once position ≤ P, the signed admission token
 */
import type { Clock } from "@casebook/kit/clock";
import type { RandomSource } from "@casebook/kit/random";
import type { FastifyInstance } from "fastify";
import { errors } from "../errors.ts";
import type { RoomTicker } from "../workers/room-ticker.ts";
import { type Admissions, bindingOf } from "./admission.ts";
import type { JoinChallenges } from "./join-challenges.ts";
import { BUYER_PATTERN, saleParams } from "./sale-schemas.ts";

export interface RoomRoutesOptions {
  /** FS-14: the proof of work a join must carry; undefined = none. */
  joinChallenge?: JoinChallenges;
  rooms: RoomTicker;
  admissions: Admissions;
  clock: Clock;
  /** The pre-queue's draw at join. */
  random: RandomSource;
}

const joinBody = {
  type: "object",
  required: ["user"],
  additionalProperties: false,
  properties: {
    user: { type: "string", pattern: BUYER_PATTERN },
    challenge: {
      type: "string",
      minLength: 1,
      maxLength: 1_000,
      description: "FS-14: from POST …/challenge",
    },
    nonce: { type: "string", pattern: "^[0-9]{1,12}$", description: "Solves the challenge" },
  },
} as const;

const challengeBody = {
  type: "object",
  required: ["user"],
  additionalProperties: false,
  properties: { user: { type: "string", pattern: BUYER_PATTERN } },
} as const;

const challengeView = {
  type: "object",
  required: ["challenge", "bits"],
  properties: {
    challenge: { type: "string" },
    bits: {
      type: "integer",
      description: "Find a nonce: SHA-256(challenge + ':' + nonce) starts with this many zero bits",
    },
  },
} as const;

const joinView = {
  type: "object",
  required: ["user", "secret", "position", "preQueue"],
  properties: {
    user: { type: "string" },
    secret: {
      type: ["string", "null"],
      description: "Shown on the first join only: send it as x-entrant-secret",
    },
    position: {
      type: ["integer", "null"],
      description: "null while in the pre-queue (drawn at the opening)",
    },
    preQueue: { type: "boolean" },
  },
} as const;

const roomView = {
  type: "object",
  required: ["open", "servingUpTo", "lastPosition", "waiting", "active"],
  properties: {
    open: { type: "boolean" },
    servingUpTo: {
      type: "integer",
      description: "Entrants at or below this position may fetch their admission",
    },
    lastPosition: { type: "integer" },
    waiting: { type: "integer" },
    active: { type: "integer" },
  },
} as const;

const admissionParams = {
  type: "object",
  required: ["saleId", "user"],
  additionalProperties: false,
  properties: { saleId: saleParams.properties.saleId, user: { type: "string", pattern: BUYER_PATTERN } },
} as const;

const secretHeaders = {
  type: "object",
  required: ["x-entrant-secret"],
  properties: { "x-entrant-secret": { type: "string", minLength: 1, maxLength: 200 } },
} as const;

const admissionView = {
  type: "object",
  required: ["state", "position", "ahead", "estimatedWaitMs", "token", "tokenExpiresAt"],
  properties: {
    state: { type: "string", enum: ["pre-queue", "waiting", "admitted"] },
    position: { type: ["integer", "null"] },
    ahead: { type: ["integer", "null"] },
    estimatedWaitMs: { type: ["integer", "null"] },
    token: {
      type: ["string", "null"],
      description: "Bearer token of the reserve route, with x-entrant-secret",
    },
    tokenExpiresAt: { type: ["string", "null"], format: "date-time" },
  },
} as const;

export function registerRoomRoutes(app: FastifyInstance, o: RoomRoutesOptions): void {
  const tags = ["waiting room"];
  const roomOr404 = async (saleId: string) => {
    const sale = await o.rooms.sale(saleId);
    if (sale === undefined) throw errors.create("SALE_NOT_FOUND", { fields: { saleId } });
    return sale;
  };

  app.post<{ Params: { saleId: string }; Body: { user: string } }>(
    "/v1/sales/:saleId/challenge",
    {
      schema: {
        summary: "FS-14: a proof-of-work challenge for one user's join (when the sale asks for one)",
        tags,
        params: saleParams,
        body: challengeBody,
        response: { 200: challengeView },
        errorCodes: ["SALE_NOT_FOUND"],
      },
      config: { accessLog: "sampled" },
    },
    async (request, reply) => {
      const sale = await roomOr404(request.params.saleId);
      reply.header("cache-control", "no-store");
      const bits = o.joinChallenge?.bits ?? 0;
      return { challenge: o.joinChallenge?.issue(sale.saleId, request.body.user) ?? "", bits };
    },
  );

  app.post<{ Params: { saleId: string }; Body: { user: string; challenge?: string; nonce?: string } }>(
    "/v1/sales/:saleId/entrants",
    {
      schema: {
        summary: "Join the sale's waiting room: one position per user",
        tags,
        params: saleParams,
        body: joinBody,
        response: { 200: joinView, 201: joinView },
        errorCodes: ["SALE_NOT_FOUND", "ROOM_FULL", "JOIN_CHALLENGE_REQUIRED", "JOIN_CHALLENGE_INVALID"],
      },
      config: { accessLog: "sampled" },
    },
    async (request, reply) => {
      const { saleId } = request.params;
      const { user } = request.body;
      const sale = await roomOr404(saleId);
      o.joinChallenge?.check(saleId, user, request.body.challenge, request.body.nonce);
      const { secret, binding } = o.admissions.newSecret();
      const joined = await o.rooms.port.join(sale, user, { binding, draw: o.random.next() });
      if (joined.kind === "full") throw errors.create("ROOM_FULL", { fields: { saleId } });
      return reply.code(joined.enrolled ? 201 : 200).send({
        user,
        secret: joined.enrolled ? secret : null,
        position: joined.kind === "queued" ? joined.position : null,
        preQueue: joined.kind === "pre-queue",
      });
    },
  );

  app.get<{ Params: { saleId: string } }>(
    "/v1/sales/:saleId/room",
    {
      schema: {
        summary: "Serving up to position P: the global status every page polls",
        tags,
        params: saleParams,
        response: { 200: roomView },
        errorCodes: ["SALE_NOT_FOUND"],
      },
      config: { accessLog: "sampled" },
    },
    async (request, reply) => {
      const s = await o.rooms.port.status(await roomOr404(request.params.saleId));
      reply.header("cache-control", "public, max-age=1");
      return {
        open: s.open,
        servingUpTo: s.servingUpTo,
        lastPosition: s.lastPosition,
        waiting: s.waiting,
        active: s.active,
      };
    },
  );

  app.post<{ Params: { saleId: string; user: string }; Headers: { "x-entrant-secret": string } }>(
    "/v1/sales/:saleId/entrants/:user/admission",
    {
      schema: {
        summary: "The entrant's turn: its place and wait, or its signed admission token once admitted",
        tags,
        params: admissionParams,
        headers: secretHeaders,
        response: { 200: admissionView },
        errorCodes: ["SALE_NOT_FOUND", "ENTRANT_NOT_FOUND", "ENTRANT_SECRET_INVALID", "ADMISSION_EXPIRED"],
      },
      config: { accessLog: "sampled" },
    },
    async (request, reply) => {
      const { saleId, user } = request.params;
      const sale = await roomOr404(saleId);
      reply.header("cache-control", "no-store");
      const binding = bindingOf(request.headers["x-entrant-secret"]);
      const a = await o.rooms.port.admit(sale, user, binding);
      if (a.kind === "unknown") throw errors.create("ENTRANT_NOT_FOUND", { fields: { saleId, user } });
      if (a.kind === "wrong-secret") {
        throw errors.create("ENTRANT_SECRET_INVALID", { fields: { field: "/headers/x-entrant-secret" } });
      }
      if (a.kind === "expired") throw errors.create("ADMISSION_EXPIRED", { fields: { saleId, user } });
      if (a.kind === "pre-queue") {
        return {
          state: "pre-queue",
          position: null,
          ahead: null,
          estimatedWaitMs: null,
          token: null,
          tokenExpiresAt: null,
        };
      }
      if (a.kind === "waiting") {
        return {
          state: "waiting",
          position: a.position,
          ahead: a.ahead,
          estimatedWaitMs: a.estimatedWaitMs,
          token: null,
          tokenExpiresAt: null,
        };
      }
      // The token lives as long as the slot (the slot's end is on the room's clock: Redis's
      // TIME, the service's clock in process; both are wall clocks in production).
      const ttlMs = Math.max(1, a.sessionEndsAtMs - o.clock.nowMs());
      const issued = o.admissions.issue(saleId, user, binding, ttlMs);
      return {
        state: "admitted",
        position: a.position,
        ahead: 0,
        estimatedWaitMs: 0,
        token: issued.token,
        tokenExpiresAt: new Date(issued.expiresAtMs).toISOString(),
      };
    },
  );
}
