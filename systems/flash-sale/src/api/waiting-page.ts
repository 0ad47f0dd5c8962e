/**
 * FS-12: the waiting page as static files — `GET /wait/` (HTML) and `GET /wait/wait.js` —
 * the same bytes for every visitor (the sale is in the URL fragment, `/wait/#sale=gig`),
 * with cache headers that let a CDN (or an object-storage origin) serve them for a day
 * without asking the backend: `public`, `s-maxage` for shared caches, `max-age` for the
 * browser, a strong ETag, and nothing that varies per visitor (no cookie, no Vary). Only
 * the page's small JSON calls reach the API, and the global one of them is cacheable too.
 *
 * @example
 * registerWaitingPage(app);  // then open http://127.0.0.1:8108/wait/#sale=gig
 */
import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import type { FastifyInstance } from "fastify";

/** Browser 5 minutes, shared caches (the CDN) a day: a new page ships under a new ETag. */
export const WAITING_PAGE_CACHE_CONTROL = "public, max-age=300, s-maxage=86400, stale-while-revalidate=60";

const FILES = [
  { path: "/wait/", file: "index.html", type: "text/html; charset=utf-8" },
  { path: "/wait/wait.js", file: "wait.js", type: "text/javascript; charset=utf-8" },
] as const;

export function registerWaitingPage(app: FastifyInstance): void {
  for (const { path, file, type } of FILES) {
    const body = readFileSync(new URL(`./waiting-page/${file}`, import.meta.url));
    const etag = `"${createHash("sha256").update(body).digest("base64url").slice(0, 27)}"`;
    app.get(
      path,
      {
        schema: {
          summary: "The static waiting page (FS-12): cacheable by a CDN",
          tags: ["waiting room"],
          response: {
            200: { type: "string", description: `${file}: the same bytes for every visitor` },
            304: { type: "null", description: "Not modified (If-None-Match)" },
          },
        },
        config: { accessLog: "sampled" },
      },
      async (request, reply) => {
        reply.header("cache-control", WAITING_PAGE_CACHE_CONTROL).header("etag", etag);
        if (request.headers["if-none-match"] === etag) return reply.code(304).send();
        return reply.type(type).send(body);
      },
    );
  }
}
