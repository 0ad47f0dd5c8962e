import assert from "node:assert/strict";
import { test } from "node:test";
import { requireBrowser } from "@casebook/lab/browser";
import { freePort } from "@casebook/lab/free-port";
import { LANDING_LINKS } from "../../src/http/landing-routes.ts";
import { createService } from "../../src/http/service.ts";

function linkService() {
  const service = createService({
    name: "links",
    version: "2.0.1",
    description: "Shortens <URLs>.",
    log: { level: "silent" },
    defaultMetrics: false,
  });
  service.app.post(
    "/v1/links",
    {
      schema: {
        summary: "Shorten a URL",
        tags: ["links"],
        body: { type: "object", required: ["target"], properties: { target: { type: "string" } } },
        response: { 201: { type: "object", properties: { code: { type: "string" } } } },
      },
    },
    async (_request, reply) => reply.code(201).send({ code: "abc" }),
  );
  return service;
}

test("GET / answers the service's name, version, description and links, as JSON", async () => {
  const service = linkService();
  const res = await service.app.inject({ url: "/", headers: { accept: "*/*" } });
  assert.equal(res.statusCode, 200);
  assert.deepEqual(res.json(), {
    name: "links",
    version: "2.0.1",
    description: "Shortens <URLs>.",
    links: {
      openapi: "/openapi.json",
      docs: "/docs",
      health: "/healthz",
      ready: "/readyz",
      metrics: "/metrics",
    },
  });
  for (const url of Object.values(LANDING_LINKS)) {
    assert.equal((await service.app.inject({ url })).statusCode, 200, `${url} answers`);
  }
  await service.close();
});

test("GET / from a browser (Accept: text/html first) is sent to the API reference page", async () => {
  const service = linkService();
  const res = await service.app.inject({
    url: "/",
    headers: { accept: "text/html,application/xhtml+xml,*/*;q=0.8" },
  });
  assert.equal(res.statusCode, 302);
  assert.equal(res.headers.location, "docs", "relative, so a path prefix in front of the service is kept");
  await service.close();
});

test("a service with a page of its own (browserHome) sends a browser there instead", async () => {
  const service = createService({
    name: "console",
    version: "0.1.0",
    log: { level: "silent" },
    browserHome: "app/",
  });
  const res = await service.app.inject({ url: "/", headers: { accept: "text/html" } });
  assert.equal(res.statusCode, 302);
  assert.equal(res.headers.location, "app/");
  assert.equal((await service.app.inject({ url: "/", headers: { accept: "*/*" } })).statusCode, 200);
  await service.close();
});

test("GET /docs is an HTML page loading the viewer from this service, never from a CDN", async () => {
  const service = linkService();
  const page = await service.app.inject({ url: "/docs" });
  assert.equal(page.statusCode, 200);
  assert.match(String(page.headers["content-type"]), /^text\/html/);
  assert.match(page.body, /<title>links API reference<\/title>/);
  const sources = [...page.body.matchAll(/(?:src|href)="([^"]+)"/g)].map((m) => m[1]!);
  assert.deepEqual(sources, [
    "docs/assets/favicon-32x32.png",
    "docs/assets/swagger-ui.css",
    "docs/assets/swagger-ui-bundle.js",
    "docs/assets/init.js",
  ]);
  for (const source of sources) {
    const asset = await service.app.inject({ url: `/${source}` });
    assert.equal(asset.statusCode, 200, source);
    assert.ok(asset.rawPayload.length > 0, source);
  }
  const bundle = await service.app.inject({ url: "/docs/assets/swagger-ui-bundle.js" });
  assert.match(String(bundle.headers["content-type"]), /^text\/javascript/);
  assert.match(String(bundle.headers["cache-control"]), /max-age=86400/);
  const other = await service.app.inject({ url: "/docs/assets/package.json" });
  assert.equal(other.statusCode, 400, "only the allowlisted viewer files are served");
  const traversal = await service.app.inject({ url: "/docs/assets/..%2F..%2Fpackage.json" });
  assert.equal(traversal.statusCode, 400);
  const doc = (await service.app.inject({ url: "/openapi.json" })).json();
  assert.ok(doc.paths["/"] && doc.paths["/docs"], "the landing and the page are documented");
  assert.equal(doc.paths["/docs/assets/{file}"], undefined, "the viewer's files are not API");
  await service.close();
});

test("a browser renders the reference page from a real service, showing its routes", async (t) => {
  const browser = await requireBrowser(t);
  if (!browser) return;
  const service = linkService();
  t.after(() => service.close());
  const { url } = await service.listen({ port: await freePort() });
  const page = await browser.openPage(`${url}/`);
  assert.equal(new URL(page.url()).pathname, "/docs", "the landing sent the browser to the page");
  await page.waitForSelector(".opblock-summary-path", { timeout: 15_000 });
  const paths = await page.locator(".opblock-summary-path").allTextContents();
  for (const path of ["/v1/links", "/healthz", "/openapi.json"]) {
    assert.ok(
      paths.some((text) => text.includes(path)),
      `${path} rendered; saw ${paths.join(" ")}`,
    );
  }
  assert.match((await page.locator(".info .title").textContent()) ?? "", /links/);
  if (process.env.CASEBOOK_SCREENSHOT_DIR) {
    await page.screenshot({
      path: `${process.env.CASEBOOK_SCREENSHOT_DIR}/api-reference.png`,
      fullPage: true,
    });
  }
});
