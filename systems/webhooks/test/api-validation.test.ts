/**
 * Bad input through HTTP, on PGlite and PostgreSQL: every refusal is problem+json that
 * names the field at fault (`errors[].field`, a JSON pointer into the request), and writes
 * nothing (row counts of every table a write could touch are unchanged). Includes the SSRF
 * policy at subscription creation and update: loopback, link-local (the cloud metadata
 * address), private and `localhost` endpoints are refused, and plain http unless allowed.
 */
import assert from "node:assert/strict";
import { contractSuite } from "@casebook/lab/contract-suite";
import {
  type ApiWorld,
  apiBackends,
  assertProblem,
  MAX_PAYLOAD_BYTES,
  problemFields,
  type RequestOptions,
  tableCounts,
} from "./api-fixture.ts";

/** Sends the request, expects the refusal naming `field`, and checks that nothing was written. */
async function refused(
  s: ApiWorld,
  method: string,
  url: string,
  options: RequestOptions,
  expected: { status: number; code: string; field: string },
) {
  const before = await tableCounts(s.db);
  const res = await s.request(method, url, options);
  const body = assertProblem(res, expected.status, expected.code);
  assert.ok(
    problemFields(body).includes(expected.field),
    `${method} ${url}: ${JSON.stringify(body.errors)} names ${expected.field}`,
  );
  assert.deepEqual(await tableCounts(s.db), before, `${method} ${url} wrote nothing`);
  return body;
}

contractSuite("API validation", apiBackends("wh_api_validation"), (it) => {
  it("events: a missing or malformed type, a non-object payload, an unknown field, a bad Idempotency-Key", async (s) => {
    const { key } = await s.tenant();
    const cases: [unknown, Record<string, string>, string][] = [
      [{ payload: {} }, {}, "/body/type"],
      [{ type: "no spaces allowed", payload: {} }, {}, "/body/type"],
      [{ type: "invoice.paid", payload: [1, 2] }, {}, "/body/payload"],
      [{ type: "invoice.paid", payload: "text" }, {}, "/body/payload"],
      [{ type: "invoice.paid", payload: {}, extra: 1 }, {}, "/body/extra"],
      [{ type: "invoice.paid", payload: {} }, { "idempotency-key": "has space" }, "/headers/idempotency-key"],
    ];
    for (const [body, headers, field] of cases) {
      await refused(
        s,
        "POST",
        "/v1/events",
        { key, body, headers },
        { status: 400, code: "REQUEST_INVALID", field },
      );
    }
  });

  it("events: a payload above the bound is 413 WEBHOOK_EVENT_TOO_LARGE naming /body/payload", async (s) => {
    const { key } = await s.tenant();
    const payload = { blob: "x".repeat(MAX_PAYLOAD_BYTES) };
    const body = await refused(
      s,
      "POST",
      "/v1/events",
      { key, body: { type: "doc.uploaded", payload } },
      { status: 413, code: "WEBHOOK_EVENT_TOO_LARGE", field: "/body/payload" },
    );
    assert.equal(body.maxBytes, MAX_PAYLOAD_BYTES);
    // Far above the body limit itself: refused by the body limit before parsing.
    const huge = { type: "doc.uploaded", payload: { blob: "x".repeat(4 * MAX_PAYLOAD_BYTES + 20_000) } };
    const res = await s.request("POST", "/v1/events", { key, body: huge });
    assertProblem(res, 413, "REQUEST_TOO_LARGE");
  });

  it("subscriptions: bad filters, limits, ordering path, secret, unknown fields — each named", async (s) => {
    const { key } = await s.tenant();
    const url = "https://hooks.example.com/in";
    const cases: [Record<string, unknown>, string][] = [
      [{}, "/body/url"],
      [{ url: 42 }, "/body/url"],
      [{ url, eventTypes: [] }, "/body/eventTypes"],
      [{ url, eventTypes: ["invoice.*.paid"] }, "/body/eventTypes/0"],
      [{ url, rateLimitPerS: 0 }, "/body/rateLimitPerS"],
      [{ url, maxConcurrency: 1000 }, "/body/maxConcurrency"],
      [{ url, orderingKeyPath: "data..id" }, "/body/orderingKeyPath"],
      [{ url, secret: "not-a-secret" }, "/body/secret"],
      [{ url, active: false }, "/body/active"],
    ];
    for (const [body, field] of cases) {
      await refused(
        s,
        "POST",
        "/v1/subscriptions",
        { key, body },
        { status: 400, code: "REQUEST_INVALID", field },
      );
    }
  });

  it("SSRF: http://127.0.0.1/… and http://169.254.169.254/ are refused at creation, whatever the scheme rule", async (s) => {
    const { key } = await s.tenant();
    const forbidden: [string, string][] = [
      ["https://127.0.0.1/hooks", "loopback"],
      ["https://169.254.169.254/latest/meta-data/", "link-local"],
      ["https://[::ffff:169.254.169.254]/", "link-local"],
      ["https://10.1.2.3/in", "private"],
      ["https://192.168.0.10:8443/in", "private"],
      ["https://[::1]/in", "loopback"],
      ["https://localhost/in", "loopback"],
      ["https://api.localhost/in", "loopback"],
    ];
    for (const [url, addressClass] of forbidden) {
      const body = await refused(
        s,
        "POST",
        "/v1/subscriptions",
        { key, body: { url } },
        { status: 422, code: "WEBHOOK_URL_FORBIDDEN", field: "/body/url" },
      );
      assert.equal(body.addressClass, addressClass, url);
    }
    // Plain http is refused first (https required unless configured): the metadata URL as written.
    for (const url of ["http://127.0.0.1/hooks", "http://169.254.169.254/", "http://hooks.example.com/in"]) {
      await refused(
        s,
        "POST",
        "/v1/subscriptions",
        { key, body: { url } },
        { status: 422, code: "WEBHOOK_URL_INSECURE", field: "/body/url" },
      );
    }
    const credentials = "https://user:pw@hooks.example.com/in";
    await refused(
      s,
      "POST",
      "/v1/subscriptions",
      { key, body: { url: credentials } },
      { status: 400, code: "WEBHOOK_URL_INVALID", field: "/body/url" },
    );
  });

  it("SSRF: an update to a forbidden URL is refused and the endpoint keeps its URL", async (s) => {
    const { key } = await s.tenant();
    const created = await s.request("POST", "/v1/subscriptions", {
      key,
      body: { url: "https://hooks.example.com/in" },
    });
    assert.equal(created.status, 201);
    const id = created.body.id as string;
    for (const url of ["https://169.254.169.254/", "https://127.0.0.1:5432/"]) {
      await refused(
        s,
        "PATCH",
        `/v1/subscriptions/${id}`,
        { key, body: { url, maxConcurrency: 2 } },
        { status: 422, code: "WEBHOOK_URL_FORBIDDEN", field: "/body/url" },
      );
    }
    const now = await s.request("GET", `/v1/subscriptions/${id}`, { key });
    assert.equal(now.body.url, "https://hooks.example.com/in");
    assert.equal(now.body.maxConcurrency, 4, "the rest of the refused PATCH was not applied either");
  });

  it("PATCH: an empty body, an unknown field, a reason without active:false; listings: bad limit and cursor", async (s) => {
    const { key } = await s.tenant();
    const created = await s.request("POST", "/v1/subscriptions", {
      key,
      body: { url: "https://hooks.example.com/in" },
    });
    const url = `/v1/subscriptions/${created.body.id}`;
    const patches: [unknown, string][] = [
      [{}, "/body"],
      [{ orderingKeyPath: "a.b" }, "/body/orderingKeyPath"],
      [{ disabledReason: "why not" }, "/body/disabledReason"],
    ];
    for (const [body, field] of patches) {
      await refused(s, "PATCH", url, { key, body }, { status: 400, code: "REQUEST_INVALID", field });
    }
    for (const [path, field] of [
      ["/v1/webhook-deliveries?limit=0", "/querystring/limit"],
      ["/v1/webhook-deliveries?limit=101", "/querystring/limit"],
      ["/v1/webhook-deliveries?state=lost", "/querystring/state"],
      ["/v1/subscriptions?limit=abc", "/querystring/limit"],
    ] as const) {
      const res = await s.request("GET", path, { key });
      assert.ok(problemFields(assertProblem(res, 400, "REQUEST_INVALID")).includes(field), path);
    }
    const forged = await s.request("GET", "/v1/webhook-deliveries?cursor=bm90LWEtY3Vyc29y", { key });
    assert.deepEqual(problemFields(assertProblem(forged, 400, "WEBHOOK_CURSOR_INVALID")), [
      "/querystring/cursor",
    ]);
  });
});

contractSuite(
  "API validation, operator allow list",
  apiBackends("wh_api_allow", { urlPolicy: { allowHttp: true, allow: ["127.0.0.1/32"] } }),
  (it) => {
    it("SSRF: what the operator allow-listed is accepted; the metadata address still is not", async (s) => {
      const { key } = await s.tenant();
      const ok = await s.request("POST", "/v1/subscriptions", {
        key,
        body: { url: "http://127.0.0.1:9113/hooks" },
      });
      assert.equal(ok.status, 201, JSON.stringify(ok.body));
      await refused(
        s,
        "POST",
        "/v1/subscriptions",
        { key, body: { url: "http://169.254.169.254/latest/meta-data/" } },
        { status: 422, code: "WEBHOOK_URL_FORBIDDEN", field: "/body/url" },
      );
      await refused(
        s,
        "POST",
        "/v1/subscriptions",
        { key, body: { url: "http://127.0.0.2/hooks" } },
        { status: 422, code: "WEBHOOK_URL_FORBIDDEN", field: "/body/url" },
      );
    });
  },
);
