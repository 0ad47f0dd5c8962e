/**
 * The edge contract every HTTP service passes (the strict edge of
 * `@casebook/infra/http`): each bad request below gets its documented 4xx as
 * problem+json, names the field where there is one, and changes nothing — the
 * service's own `stateProbe()` (its list endpoints, its counters) reads the same
 * before and after. The last case sends the valid write and checks the probe
 * DOES see it, so a probe that reads nothing cannot pass the suite.
 *
 * Cases: wrong JSON types per declared field (400 naming it), U+0000 and a lone
 * surrogate in a string field (400 naming it), an unknown field (400 naming it),
 * `__proto__` in a body (400 saying so), malformed JSON (400), a body over the
 * limit (413), a wrong method on the write's path (405 + Allow), a non-JSON
 * Content-Type (415), no credentials and wrong credentials (401; skipped with the
 * service's stated reason when it has no auth).
 *
 * A service that answers some paths in another error shape (an OpenAI-compatible API's
 * `{"error":{…}}`, infra's `ErrorFormat`) passes `errorShape`: its content type and how to
 * read the problem's status, code and field errors out of its body; every case then holds
 * in that shape.
 *
 * Runs in-process (Fastify inject) on the service's embedded engines: one service
 * per suite, opened like a contract-suite backend (`open` may skip with a reason).
 *
 * @example
 * edgeContractSuite({
 *   name: "widgets",
 *   open: async () => {
 *     const service = await startWidgets(); // createService + the system's register-api
 *     return { subject: { service, stateProbe: () => countWidgets() }, close: () => service.close() };
 *   },
 *   write: { method: "POST", url: "/v1/widgets", body: { name: "gear", cost: 3 } },
 *   fields: { "/name": "string", "/cost": "integer" },
 *   stringField: "/name",
 *   bodyLimitBytes: 1_048_576,
 *   wrongMethod: { method: "PUT", allow: "GET, HEAD, POST" },
 *   auth: { header: "authorization", valid: `Bearer ${key}`, wrong: "Bearer nope" },
 * });
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import type { Service } from "@casebook/infra/http/service";
import { type Backend, contractSuite } from "./contract-suite.ts";

export type JsonType = "string" | "integer" | "number" | "boolean" | "array" | "object";

/** Values of every other JSON type, for a field declared as `type`: what coercion used to let through. */
export const wrongValuesOf: Readonly<Record<JsonType, readonly unknown[]>> = Object.freeze({
  string: [5, true, ["a"], { a: "a" }],
  integer: ["3", true, 1.5, [1], { n: 1 }],
  number: ["3", true, [1], { n: 1 }],
  boolean: ["true", 1, [true], { b: true }],
  array: ["a", 5, true, { 0: "a" }],
  object: ["a", 5, true, ["a"]],
});

export interface EdgeSubject {
  /** The running service (embedded engines), driven through `service.app.inject`. */
  service: Service;
  /** Everything a write could change, read through the service's own list endpoints or counters. */
  stateProbe(): Promise<unknown>;
  /**
   * The valid write's headers beyond Content-Type and auth (an Idempotency-Key), fresh per call so a
   * replay store never answers the positive control; default none.
   */
  writeHeaders?(): Record<string, string>;
}

export interface EdgeAuth {
  /** The header carrying credentials, lower case (`authorization`, `x-api-key`). */
  header: string;
  /** A credential the service accepts; read after `open`, so it may be created there. */
  valid(): string;
  /** A well-formed credential the service does not accept. */
  wrong: string;
}

/** How errors look on the write's path when they are not problem+json. */
export interface ErrorShape {
  readonly contentType: RegExp;
  /** The problem inside a body: `status`, `code` (the house's `AREA_WHAT`) and `errors` ([{ field, message }]). */
  read(body: unknown): Record<string, unknown>;
}

const problemJson: ErrorShape = {
  contentType: /^application\/problem\+json/,
  read: (body) => body as Record<string, unknown>,
};

export interface EdgeContract {
  /** The system's name, in every test name. */
  name: string;
  /** Starts the service in-process on its embedded engines (an engine probe inside throws; CI's closed-engine pass skips the block). */
  open: Backend<EdgeSubject>["open"];
  /** The write route and a body it accepts (a 2xx that changes what `stateProbe` reads). */
  write: { method: "POST" | "PUT" | "PATCH"; url: string; body: Record<string, unknown> };
  /**
   * Declared body fields by JSON pointer into `write.body` (`/cost`, `/descriptors/ip`): a type gets
   * `wrongValuesOf[type]`; a list gives the wrong values itself (a field taking two types, e.g. an
   * amount as an integer or a decimal string, lists what is wrong for it).
   */
  fields: Readonly<Record<string, JsonType | readonly unknown[]>>;
  /** A string field of `write.body` for the NUL, lone-surrogate and oversize cases. */
  stringField: string;
  /** The write route's body limit: a body one byte over it must be 413. */
  bodyLimitBytes: number;
  /** A method the write's path does not serve, and the exact `Allow` the 405 must carry. */
  wrongMethod: { method: string; allow: string };
  /** The credentials the write needs, or why the service has none (the auth cases are skipped with it). */
  auth: EdgeAuth | { none: string };
  /** Errors on the write's path in another shape than problem+json; default problem+json. */
  errorShape?: ErrorShape;
}

interface Sent {
  status: number;
  headers: Record<string, unknown>;
  body: string;
}

function setAt(body: Record<string, unknown>, pointer: string, value: unknown): Record<string, unknown> {
  const copy = structuredClone(body);
  const segments = pointer.split("/").slice(1);
  const last = segments.pop();
  assert.ok(last !== undefined, `field pointer ${pointer} must name a field`);
  let target: Record<string, unknown> = copy;
  for (const segment of segments) target = target[segment] as Record<string, unknown>;
  assert.ok(typeof target === "object" && target !== null, `${pointer} is not inside write.body`);
  target[last] = value;
  return copy;
}

function problemOf(res: Sent, status: number, what: string): Record<string, unknown> {
  return problemIn(problemJson, res, status, what);
}

function problemIn(shape: ErrorShape, res: Sent, status: number, what: string): Record<string, unknown> {
  assert.equal(res.status, status, `${what}: ${res.body}`);
  assert.match(String(res.headers["content-type"]), shape.contentType, what);
  const problem = shape.read(JSON.parse(res.body));
  assert.equal(problem.status, status, what);
  return problem;
}

/** Asserts the problem names `field` among its `errors`. */
function assertNames(problem: Record<string, unknown>, field: string, what: string): { message: string } {
  const errors = (problem.errors ?? []) as Array<{ field: string; message: string }>;
  const named = errors.find((error) => error.field === field);
  assert.ok(named, `${what}: expected errors[].field ${field}, got ${JSON.stringify(errors)}`);
  return named;
}

/** Registers the edge contract's cases for one service. */
export function edgeContractSuite(contract: EdgeContract): void {
  const backend: Backend<EdgeSubject> = { name: "embedded engines", embedded: true, open: contract.open };
  const { write } = contract;
  const shape = contract.errorShape ?? problemJson;
  const shapedProblem = (res: Sent, status: number, what: string) => problemIn(shape, res, status, what);
  const authOf = (): Record<string, string> =>
    "none" in contract.auth ? {} : { [contract.auth.header]: contract.auth.valid() };

  async function send(subject: EdgeSubject, payload: string, headers: Record<string, string> = {}) {
    const res = await subject.service.app.inject({
      method: write.method,
      url: write.url,
      headers: { "content-type": "application/json", ...authOf(), ...subject.writeHeaders?.(), ...headers },
      payload,
    });
    return { status: res.statusCode, headers: res.headers, body: res.body } satisfies Sent;
  }

  /** Runs `attempt` between two probes and asserts nothing changed. */
  async function unchanged(subject: EdgeSubject, attempt: () => Promise<void>): Promise<void> {
    const before = await subject.stateProbe();
    await attempt();
    assert.deepEqual(await subject.stateProbe(), before, "a refused request changed the service's state");
  }

  contractSuite(`${contract.name} edge contract`, [backend], (it) => {
    it("a wrong JSON type in any declared field is 400 naming the field: bodies are never coerced", (s) =>
      unchanged(s, async () => {
        for (const [pointer, declared] of Object.entries(contract.fields)) {
          const wrong = typeof declared === "string" ? wrongValuesOf[declared] : declared;
          for (const value of wrong) {
            const what = `${pointer} = ${JSON.stringify(value)}`;
            const res = await send(s, JSON.stringify(setAt(write.body, pointer, value)));
            assertNames(shapedProblem(res, 400, what), `/body${pointer}`, what);
          }
        }
      }));

    it("U+0000 or a lone surrogate in a string field is 400 naming the field", (s) =>
      unchanged(s, async () => {
        for (const text of ["a\u0000b", "a\ud800", "\udc00b"]) {
          const what = `${contract.stringField} = ${JSON.stringify(text)}`;
          const res = await send(s, JSON.stringify(setAt(write.body, contract.stringField, text)));
          assertNames(shapedProblem(res, 400, what), `/body${contract.stringField}`, what);
        }
      }));

    it("an unknown field is 400 naming it", (s) =>
      unchanged(s, async () => {
        const res = await send(s, JSON.stringify({ ...write.body, unexpectedField: 1 }));
        assertNames(shapedProblem(res, 400, "unknown field"), "/body/unexpectedField", "unknown field");
      }));

    it("a __proto__ key is 400 with a message that says so", (s) =>
      unchanged(s, async () => {
        const res = await send(s, `{"__proto__":{"admin":true},${JSON.stringify(write.body).slice(1)}`);
        const named = assertNames(shapedProblem(res, 400, "__proto__"), "/body/__proto__", "__proto__");
        assert.match(named.message, /__proto__/);
      }));

    it("malformed JSON is 400 REQUEST_MALFORMED", (s) =>
      unchanged(s, async () => {
        const res = await send(s, `${JSON.stringify(write.body).slice(0, -1)},`);
        assert.equal(shapedProblem(res, 400, "malformed JSON").code, "REQUEST_MALFORMED");
      }));

    it("a body one byte over the limit is 413 REQUEST_TOO_LARGE", (s) =>
      unchanged(s, async () => {
        const base = JSON.stringify(setAt(write.body, contract.stringField, "")).length;
        const filler = "x".repeat(contract.bodyLimitBytes - base + 1);
        const payload = JSON.stringify(setAt(write.body, contract.stringField, filler));
        assert.equal(Buffer.byteLength(payload), contract.bodyLimitBytes + 1);
        const res = await send(s, payload);
        assert.equal(shapedProblem(res, 413, "oversize body").code, "REQUEST_TOO_LARGE");
      }));

    it("a method the write's path does not serve is 405 with Allow", (s) =>
      unchanged(s, async () => {
        const res = await s.service.app.inject({
          method: contract.wrongMethod.method as "PUT",
          url: write.url,
          headers: { "content-type": "application/json", ...authOf() },
          payload: JSON.stringify(write.body),
        });
        const sent = { status: res.statusCode, headers: res.headers, body: res.body };
        assert.equal(shapedProblem(sent, 405, "wrong method").code, "REQUEST_METHOD_NOT_ALLOWED");
        assert.equal(res.headers.allow, contract.wrongMethod.allow);
      }));

    it("a Content-Type other than JSON is 415, text/plain included", (s) =>
      unchanged(s, async () => {
        for (const type of ["text/plain", "application/x-www-form-urlencoded"]) {
          const res = await send(s, JSON.stringify(write.body), { "content-type": type });
          assert.equal(shapedProblem(res, 415, type).code, "REQUEST_MEDIA_TYPE_UNSUPPORTED");
        }
      }));

    const auth = contract.auth;
    if ("none" in auth) {
      // Called inside the suite's describe, so the skip and its reason show in the service's report.
      test("no credentials, or wrong ones, are 401", { skip: auth.none }, () => {});
    } else {
      it("no credentials, or wrong ones, are 401", (s) =>
        unchanged(s, async () => {
          for (const credential of [undefined, auth.wrong]) {
            const res = await s.service.app.inject({
              method: write.method,
              url: write.url,
              headers: {
                "content-type": "application/json",
                ...s.writeHeaders?.(),
                ...(credential === undefined ? {} : { [auth.header]: credential }),
              },
              payload: JSON.stringify(write.body),
            });
            const sent = { status: res.statusCode, headers: res.headers, body: res.body };
            shapedProblem(sent, 401, credential === undefined ? "no credentials" : "wrong credentials");
          }
        }));
    }

    it("control: the valid write succeeds and the state probe sees it", async (s) => {
      const before = await s.stateProbe();
      const res = await send(s, JSON.stringify(write.body));
      assert.ok(res.status >= 200 && res.status < 300, `the valid write answered ${res.status}: ${res.body}`);
      assert.notDeepEqual(await s.stateProbe(), before, "stateProbe() did not see a successful write");
    });
  });
}

/** A service whose HTTP side is only the ops routes (the cache node: its API is RESP on another port). */
export interface OpsEdgeContract {
  name: string;
  open: Backend<EdgeSubject>["open"];
}

/**
 * The part of the edge contract a service without HTTP writes can break: a wrong method on an
 * ops route is 405 with `Allow`, an unknown path 404, both problem+json and changing nothing.
 */
export function opsEdgeContractSuite(contract: OpsEdgeContract): void {
  const backend: Backend<EdgeSubject> = { name: "embedded engines", embedded: true, open: contract.open };
  contractSuite(`${contract.name} edge contract (ops routes only)`, [backend], (it) => {
    it("a method an ops route does not serve is 405 with Allow", async (s) => {
      const before = await s.stateProbe();
      for (const url of ["/healthz", "/readyz", "/metrics", "/openapi.json"]) {
        for (const method of ["POST", "PUT", "DELETE"] as const) {
          const res = await s.service.app.inject({ method, url });
          const sent = { status: res.statusCode, headers: res.headers, body: res.body };
          assert.equal(problemOf(sent, 405, `${method} ${url}`).code, "REQUEST_METHOD_NOT_ALLOWED");
          assert.equal(res.headers.allow, "GET, HEAD", `${method} ${url}`);
        }
      }
      assert.deepEqual(await s.stateProbe(), before);
    });

    it("an unknown path is 404 problem+json, whatever the method", async (s) => {
      for (const method of ["GET", "POST"] as const) {
        const res = await s.service.app.inject({ method, url: "/v1/no-such-route" });
        const sent = { status: res.statusCode, headers: res.headers, body: res.body };
        assert.equal(problemOf(sent, 404, `${method} unknown`).code, "RESOURCE_NOT_FOUND");
        assert.equal(res.headers.allow, undefined);
      }
    });
  });
}
