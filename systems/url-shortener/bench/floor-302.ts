/**
 * The floor of Node's HTTP stack for the redirect bench: a bare `node:http` server answering
 * every request with the same 302 (Location and Cache-Control, as ours sends) — no routing,
 * no store, no log. GET /healthz and /readyz answer 200 (lab's readiness check). Listens on PORT.
 *
 * @example
 * // PORT=8190 node systems/url-shortener/bench/floor-302.ts
 */
import { createServer } from "node:http";

const server = createServer((req, res) => {
  if (req.url === "/healthz" || req.url === "/readyz") {
    res.writeHead(200, { "content-type": "text/plain" }).end("ok\n");
    return;
  }
  res.writeHead(302, { location: "https://example.com/target", "cache-control": "max-age=300" }).end();
});
server.keepAliveTimeout = 65_000;
server.listen(Number(process.env.PORT ?? 0), process.env.HOST ?? "127.0.0.1");
process.once("SIGTERM", () => server.close(() => process.exit(0)));
