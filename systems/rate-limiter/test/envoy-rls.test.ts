/**
 * The Envoy v3 rate limit service (src/api/envoy-rls.ts) over real gRPC: a grpc-js
 * client built from the same .proto files calls ShouldRateLimit on a server bound to
 * port 0, in front of the in-process engine with a ManualClock (windows never roll
 * during a test). Covers the decision per descriptor, the statuses and headers Envoy
 * reads, hits_addend, domain mismatch, fail-closed → UNAVAILABLE and malformed input.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { createLogger } from "@casebook/infra/http/logger";
import { ManualClock } from "@casebook/kit/clock";
import * as grpc from "@grpc/grpc-js";
import * as protoLoader from "@grpc/proto-loader";
import { startEnvoyRls } from "../src/api/envoy-rls.ts";
import { type EnvoyRls, envoyRateLimit } from "../src/api/envoy-rls-answer.ts";
import {
  ENVOY_RLS_LOADER_OPTIONS,
  ENVOY_RLS_PROTO,
  type RlsDescriptor,
  type RlsRequest,
  type RlsResponse,
} from "../src/api/envoy-rls-wire.ts";
import { createRateLimiter, type RateLimiter } from "../src/create-rate-limiter.ts";
import { parsePolicyConfig } from "../src/domain/policy.ts";

const DOMAIN = "edge";
/** Bound on one test call: a hung server fails the test instead of stalling it. */
const CALL_DEADLINE_MS = 5_000;

const policies = parsePolicyConfig({
  domain: DOMAIN,
  policies: [
    {
      name: "per-ip",
      key: "ip:{ip}",
      limit: { algorithm: "fixed-window", limit: 3, windowMs: 60_000 },
    },
    {
      name: "user-route",
      key: "user:{user}:route:{route}",
      // 1 token per 1 000 s: no refill to speak of while a test runs.
      limit: { algorithm: "token-bucket", capacity: 5, ratePerS: 0.001 },
    },
    {
      name: "observe-user",
      key: "user:{user}",
      shadow: true,
      limit: { algorithm: "token-bucket", capacity: 1, ratePerS: 0.001 },
    },
    {
      name: "billing",
      match: { plan: "*" },
      key: "key:{apiKey}",
      failMode: "closed",
      limit: { algorithm: "token-bucket", capacity: 10, ratePerS: 0.001 },
    },
  ],
});

type Client = grpc.Client & {
  ShouldRateLimit(
    request: RlsRequest,
    options: grpc.CallOptions,
    callback: (error: grpc.ServiceError | null, response?: RlsResponse) => void,
  ): void;
};

/** A client from the same .proto, loaded the way any grpc-js user would. */
function connect(port: number): Client {
  const definition = protoLoader.loadSync(ENVOY_RLS_PROTO.file, {
    ...ENVOY_RLS_LOADER_OPTIONS,
    includeDirs: [ENVOY_RLS_PROTO.includeDir],
  });
  const pkg = grpc.loadPackageDefinition(definition) as unknown as {
    envoy: { service: { ratelimit: { v3: { RateLimitService: grpc.ServiceClientConstructor } } } };
  };
  const Service = pkg.envoy.service.ratelimit.v3.RateLimitService;
  return new Service(`127.0.0.1:${port}`, grpc.credentials.createInsecure()) as unknown as Client;
}

function call(client: Client, request: RlsRequest): Promise<RlsResponse> {
  return new Promise((resolve, reject) => {
    client.ShouldRateLimit(request, { deadline: Date.now() + CALL_DEADLINE_MS }, (error, response) =>
      error ? reject(error) : resolve(response!),
    );
  });
}

async function callError(client: Client, request: RlsRequest): Promise<grpc.ServiceError> {
  try {
    await call(client, request);
  } catch (error) {
    return error as grpc.ServiceError;
  }
  assert.fail("expected the call to fail");
}

const entry = (key: string, value: string) => ({ key, value });
const ask = (...descriptors: RlsDescriptor[]) => ({ domain: DOMAIN, descriptors });
const headersOf = (response: RlsResponse) =>
  Object.fromEntries((response.response_headers_to_add ?? []).map((h) => [h.key, h.value]));

/** On a minute boundary: fixed windows are epoch-aligned, so a fresh window has its full 60 s. */
const START_MS = 1_700_000_040_000;

const log = createLogger({ service: "rate-limiter", version: "test", level: "silent" });

describe("Envoy RLS over gRPC", () => {
  const clock = new ManualClock(START_MS);
  let rl: RateLimiter;
  let rls: EnvoyRls;
  let client: Client;

  before(async () => {
    rl = await createRateLimiter({ policies, clock });
    rls = await startEnvoyRls({ limiter: rl.limiter, port: 0, host: "127.0.0.1", log });
    client = connect(rls.port);
  });

  after(async () => {
    client.close();
    await rls.close();
    await rl.close();
  });

  test("under the limit: OK with the policy as Envoy's current_limit, remaining and reset", async () => {
    const response = await call(client, ask({ entries: [entry("remote_address", "203.0.113.1")] }));
    assert.equal(response.overall_code, "OK");
    assert.equal(response.statuses.length, 1);
    const status = response.statuses[0]!;
    assert.equal(status.code, "OK");
    assert.deepEqual(status.current_limit, { name: "per-ip", requests_per_unit: 3, unit: "MINUTE" });
    assert.equal(status.limit_remaining, 2);
    assert.equal(Number(status.duration_until_reset!.seconds), 60);
    assert.deepEqual(response.response_headers_to_add ?? [], [], "headers only when over limit by default");
  });

  test("past the limit: OVER_LIMIT with the status and the RL-15 headers for Envoy's 429", async () => {
    const request = ask({ entries: [entry("remote_address", "203.0.113.2")] });
    for (let i = 0; i < 3; i++) assert.equal((await call(client, request)).overall_code, "OK");
    const response = await call(client, request);
    assert.equal(response.overall_code, "OVER_LIMIT");
    const status = response.statuses[0]!;
    assert.equal(status.code, "OVER_LIMIT");
    assert.equal(status.limit_remaining, 0);
    assert.equal(Number(status.duration_until_reset!.seconds), 60, "until the window rolls");
    const headers = headersOf(response);
    assert.equal(headers["Retry-After"], "60");
    assert.equal(headers["RateLimit-Policy"], '"per-ip";q=3;w=60');
    assert.equal(headers.RateLimit, '"per-ip";r=0;t=60');
    assert.equal(headers["X-RateLimit-Limit"], "3");
    assert.equal(headers["X-RateLimit-Remaining"], "0");
  });

  test("several descriptors: one status each, in order; any over limit makes the request over limit", async () => {
    const ip = { entries: [entry("remote_address", "203.0.113.3")] };
    const userRoute = { entries: [entry("user", "u-multi"), entry("route", "/v1/pay")] };
    const unknown = { entries: [entry("destination_cluster", "backend")] };
    for (let i = 0; i < 3; i++) await call(client, ask(ip));
    const response = await call(client, ask(ip, userRoute, unknown));
    assert.equal(response.overall_code, "OVER_LIMIT");
    assert.deepEqual(
      response.statuses.map((s) => [s.code, s.current_limit?.name]),
      [
        ["OVER_LIMIT", "per-ip"],
        ["OK", "user-route"],
        ["OK", undefined],
      ],
    );
    assert.equal(response.statuses[1]!.limit_remaining, 4, "the allowed descriptor still spent its unit");
    assert.deepEqual(response.statuses[1]!.current_limit, {
      name: "user-route",
      requests_per_unit: 2_592,
      unit: "MONTH",
    });
    assert.match(headersOf(response)["RateLimit-Policy"]!, /"per-ip";q=3;w=60, "user-route";q=5;w=5000/);
  });

  test("a descriptor selects the policies built from exactly its keys: [user, route] never spends per-ip", async () => {
    const both = { entries: [entry("remote_address", "203.0.113.4"), entry("user", "u-exact")] };
    const response = await call(client, ask(both));
    assert.deepEqual(response.statuses, [{ code: "OK" }], "no policy uses exactly {ip, user}");
    const ip = await call(client, ask({ entries: [entry("remote_address", "203.0.113.4")] }));
    assert.equal(ip.statuses[0]!.limit_remaining, 2, "the per-ip window is untouched");
  });

  test("hits_addend: request level for every descriptor, descriptor level wins, 0 checks without spending", async () => {
    const ip = (value: string) => ({ entries: [entry("remote_address", value)] });
    const spent = await call(client, { ...ask(ip("203.0.113.5")), hits_addend: 3 });
    assert.equal(spent.statuses[0]!.limit_remaining, 0);
    assert.equal((await call(client, ask(ip("203.0.113.5")))).overall_code, "OVER_LIMIT");

    const own = await call(client, {
      ...ask({ ...ip("203.0.113.6"), hits_addend: { value: "1" } }, ip("203.0.113.7")),
      hits_addend: 2,
    });
    assert.deepEqual(
      own.statuses.map((s) => s.limit_remaining),
      [2, 1],
    );

    const checkOnly = await call(client, ask({ ...ip("203.0.113.6"), hits_addend: { value: "0" } }));
    assert.equal(checkOnly.overall_code, "OK");
    const after = await call(client, ask(ip("203.0.113.6")));
    assert.equal(after.statuses[0]!.limit_remaining, 1, "the check-only call spent nothing");
  });

  test("more units than a policy's burst can never pass: OVER_LIMIT at once and nothing is spent", async () => {
    const ip = { entries: [entry("remote_address", "203.0.113.8")] };
    const response = await call(client, { ...ask(ip), hits_addend: 4 });
    assert.equal(response.overall_code, "OVER_LIMIT");
    assert.equal(response.statuses[0]!.current_limit?.name, "per-ip");
    assert.equal(rl.breaker.state, "closed", "an impossible cost is not a store failure");
    assert.equal((await call(client, ask(ip))).statuses[0]!.limit_remaining, 2, "the window is untouched");
  });

  test("shadow policies are counted but never make a descriptor OVER_LIMIT", async () => {
    const user = { entries: [entry("user", "u-shadow")] };
    for (let i = 0; i < 3; i++) {
      const response = await call(client, ask(user));
      assert.equal(response.overall_code, "OK");
      assert.deepEqual(response.statuses, [{ code: "OK" }], "shadow limits are not advertised");
    }
  });

  test("another domain matches no policy: OK for every descriptor, nothing spent (as envoyproxy/ratelimit)", async () => {
    const ip = { entries: [entry("remote_address", "203.0.113.9")] };
    for (let i = 0; i < 5; i++) {
      const response = await call(client, { domain: "someone-else", descriptors: [ip, ip] });
      assert.equal(response.overall_code, "OK");
      assert.deepEqual(response.statuses, [{ code: "OK" }, { code: "OK" }]);
    }
    assert.equal((await call(client, ask(ip))).statuses[0]!.limit_remaining, 2);
  });

  test("malformed requests are INVALID_ARGUMENT naming the field", async () => {
    const ip = { entries: [entry("remote_address", "203.0.113.10")] };
    const cases: [RlsRequest, RegExp][] = [
      [{ descriptors: [ip] }, /^domain/],
      [{ domain: DOMAIN, descriptors: [] }, /^descriptors:/],
      [ask({ entries: [] }), /descriptors\[0\]\.entries/],
      [ask(ip, { entries: [{ value: "x" }] }), /descriptors\[1\]\.entries\[0\]\.key/],
      [ask({ entries: [entry("user", "x".repeat(5_000))] }), /value: longer than/],
      [ask(...Array.from({ length: 65 }, () => ip)), /^descriptors:/],
    ];
    for (const [request, details] of cases) {
      const error = await callError(client, request);
      assert.equal(error.code, grpc.status.INVALID_ARGUMENT);
      assert.match(error.details, details);
    }
  });

  test("bytes that are not a RateLimitRequest are INVALID_ARGUMENT, not INTERNAL", async () => {
    const error = await new Promise<grpc.ServiceError>((resolve) => {
      client.makeUnaryRequest(
        "/envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit",
        () => Buffer.from([0x0a, 0xff, 0xff, 0xff]),
        (bytes: Buffer) => bytes,
        {},
        { deadline: Date.now() + CALL_DEADLINE_MS },
        (err) => resolve(err!),
      );
    });
    assert.equal(error.code, grpc.status.INVALID_ARGUMENT);
    assert.match(error.details, /not a RateLimitRequest/);
  });
});

describe("Envoy RLS when the store fails", () => {
  const clock = new ManualClock(START_MS);
  let rl: RateLimiter;
  let rls: EnvoyRls;
  let client: Client;

  before(async () => {
    rl = await createRateLimiter({ policies, clock });
    rl.store.spend = async () => {
      throw new Error("store down (test)");
    };
    rls = await startEnvoyRls({ limiter: rl.limiter, port: 0, host: "127.0.0.1", log });
    client = connect(rls.port);
  });

  after(async () => {
    client.close();
    await rls.close();
    await rl.close();
  });

  test("RL-12 a fail-closed policy answers gRPC UNAVAILABLE so Envoy applies failure_mode_deny", async () => {
    const billing = { entries: [entry("apiKey", "k-1"), entry("plan", "pro")] };
    const error = await callError(client, ask(billing));
    assert.equal(error.code, grpc.status.UNAVAILABLE);
    assert.match(error.details, /fail-closed/);
  });

  test("RL-11 a fail-open policy is still answered, by the in-memory fallback", async () => {
    const response = await call(client, ask({ entries: [entry("remote_address", "198.51.100.1")] }));
    assert.equal(response.overall_code, "OK");
    assert.equal(response.statuses[0]!.current_limit?.name, "per-ip");
  });
});

test("a fail-open descriptor stays fail-open when a fail-closed policy uses a subset of its keys", async () => {
  const rl = await createRateLimiter({
    clock: new ManualClock(START_MS),
    policies: parsePolicyConfig({
      domain: DOMAIN,
      policies: [
        {
          name: "closed-user",
          key: "user:{user}",
          failMode: "closed",
          limit: { algorithm: "token-bucket", capacity: 5, ratePerS: 0.001 },
        },
        {
          name: "open-user-route",
          key: "user:{user}:route:{route}",
          failMode: "open",
          limit: { algorithm: "token-bucket", capacity: 5, ratePerS: 0.001 },
        },
      ],
    }),
  });
  rl.store.spend = async () => {
    throw new Error("store down (test)");
  };
  const rls = await startEnvoyRls({ limiter: rl.limiter, port: 0, host: "127.0.0.1", log });
  const client = connect(rls.port);
  try {
    const response = await call(client, ask({ entries: [entry("user", "u"), entry("route", "/r")] }));
    assert.equal(response.statuses[0]!.current_limit?.name, "open-user-route");
  } finally {
    client.close();
    await rls.close();
    await rl.close();
  }
});

describe("Envoy RLS lifecycle and configuration", () => {
  test("close() stops serving: a later call fails UNAVAILABLE", async () => {
    const rl = await createRateLimiter({ policies, clock: new ManualClock(0) });
    const rls = await startEnvoyRls({ limiter: rl.limiter, port: 0, host: "127.0.0.1", log });
    const client = connect(rls.port);
    assert.equal(
      (await call(client, ask({ entries: [entry("remote_address", "192.0.2.1")] }))).overall_code,
      "OK",
    );
    await rls.close();
    const error = await callError(client, ask({ entries: [entry("remote_address", "192.0.2.1")] }));
    assert.equal(error.code, grpc.status.UNAVAILABLE);
    client.close();
    await rl.close();
  });

  test("keyAliases naming a key we do not have fails the start", async () => {
    const rl = await createRateLimiter({ policies, clock: new ManualClock(0) });
    await assert.rejects(
      startEnvoyRls({
        limiter: rl.limiter,
        port: 0,
        host: "127.0.0.1",
        log,
        keyAliases: { x_user: "usr" as "user" },
      }),
      /keyAliases\.x_user/,
    );
    await rl.close();
  });
});

describe("envoyRateLimit: a policy as Envoy's requests_per_unit + unit", () => {
  const cases: [Parameters<typeof envoyRateLimit>[0], ReturnType<typeof envoyRateLimit>][] = [
    [
      { algorithm: "fixed-window", limit: 1_000, windowMs: 60_000 },
      { requestsPerUnit: 1_000, unit: "MINUTE" },
    ],
    [
      { algorithm: "sliding-window-counter", limit: 10, windowMs: 1_000 },
      { requestsPerUnit: 10, unit: "SECOND" },
    ],
    [
      { algorithm: "token-bucket", capacity: 100, ratePerS: 50 },
      { requestsPerUnit: 50, unit: "SECOND" },
    ],
    [
      { algorithm: "token-bucket", capacity: 5, ratePerS: 0.5 },
      { requestsPerUnit: 30, unit: "MINUTE" },
    ],
    [
      { algorithm: "gcra", burst: 3, ratePerS: 1 / 3 },
      { requestsPerUnit: 20, unit: "MINUTE" },
    ],
    [
      { algorithm: "fixed-window", limit: 7, windowMs: 90_000 },
      { requestsPerUnit: 280, unit: "HOUR" },
    ],
    // One per week is no whole number in any unit: the largest unit, rounded.
    [
      { algorithm: "fixed-window", limit: 1, windowMs: 604_800_000 },
      { requestsPerUnit: 52, unit: "YEAR" },
    ],
  ];
  for (const [limit, expected] of cases) {
    test(`${JSON.stringify(limit)} → ${expected.requestsPerUnit}/${expected.unit}`, () => {
      assert.deepEqual(envoyRateLimit(limit), expected);
    });
  }
});

describe("Envoy RLS with RATE_LIMITER_TOKEN", () => {
  const TOKENS = ["envoy-token-0123456789", "rotated-token-0123456789"];

  /** ShouldRateLimit with `authorization` metadata when given. */
  function callWith(client: Client, authorization: string | undefined): Promise<RlsResponse> {
    const metadata = new grpc.Metadata();
    if (authorization !== undefined) metadata.set("authorization", authorization);
    const typed = client as unknown as {
      ShouldRateLimit(
        request: RlsRequest,
        metadata: grpc.Metadata,
        options: grpc.CallOptions,
        callback: (error: grpc.ServiceError | null, response?: RlsResponse) => void,
      ): void;
    };
    return new Promise((resolve, reject) => {
      typed.ShouldRateLimit(
        ask({ entries: [entry("remote_address", "192.0.2.200")] }),
        metadata,
        { deadline: Date.now() + CALL_DEADLINE_MS },
        (error, response) => (error ? reject(error) : resolve(response!)),
      );
    });
  }

  test("a call without one of the tokens is UNAUTHENTICATED and spends nothing; with one it is decided", async (t) => {
    const rl = await createRateLimiter({ policies, clock: new ManualClock(START_MS) });
    const rls = await startEnvoyRls({ limiter: rl.limiter, port: 0, host: "127.0.0.1", log, tokens: TOKENS });
    const client = connect(rls.port);
    t.after(async () => {
      client.close();
      await rls.close();
      await rl.close();
    });
    for (const authorization of [undefined, "Bearer wrong-token-0123456789", `Basic ${TOKENS[0]}`]) {
      await assert.rejects(callWith(client, authorization), (error: grpc.ServiceError) => {
        assert.equal(error.code, grpc.status.UNAUTHENTICATED, String(authorization));
        assert.match(error.details, /authorization: Bearer/);
        return true;
      });
    }
    for (const token of TOKENS) {
      const response = await callWith(client, `Bearer ${token}`);
      assert.equal(response.overall_code, "OK");
    }
    // per-ip is a fixed window of 3: the two authenticated calls spent 2, the refused ones nothing.
    const third = await callWith(client, `Bearer ${TOKENS[0]}`);
    assert.equal(third.statuses[0]!.limit_remaining, 0);
  });
});
