/**
 * The API reference page: `GET /docs` renders this service's /openapi.json with Swagger UI,
 * whose assets come from the pinned `swagger-ui-dist` npm package and are served by the
 * service itself (`/docs/assets/…`): no CDN, so the page works offline, behind a firewall,
 * and shows the viewer version this repository tested. Links in the page are relative
 * (`docs/assets/…`, `openapi.json`), so it keeps working behind a proxy that mounts the
 * service under a path prefix.
 *
 * Only an allowlist of asset files is served (a path parameter never reaches the file
 * system), each read once and kept in memory (~1.5 MB for the bundle).
 *
 * @example
 * registerApiReference(app, { title: "payments" });
 * // GET /docs → text/html; GET /docs/assets/swagger-ui-bundle.js → the viewer
 */
import { readFile } from "node:fs/promises";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import type { FastifyInstance } from "fastify";
import "./access-log.ts";
import "./openapi.ts";
import { OPS_TAG } from "./ops-routes.ts";

export const API_REFERENCE_PATH = "/docs";

/** The viewer files the page loads, with their content types; nothing else is served. */
const ASSETS: Readonly<Record<string, string>> = {
  "swagger-ui.css": "text/css; charset=utf-8",
  "swagger-ui-bundle.js": "text/javascript; charset=utf-8",
  "favicon-32x32.png": "image/png",
  "init.js": "text/javascript; charset=utf-8",
};

/** A day: the asset names do not change with the version, so a browser must not keep them for long. */
const ASSET_MAX_AGE_S = 86_400;

/** Starts Swagger UI on the document next to the page; a file (not inline) so a strict CSP can allow it. */
const INIT_SCRIPT = `window.addEventListener("load", () => {
  window.ui = SwaggerUIBundle({ url: "openapi.json", dom_id: "#api", deepLinking: true, tryItOutEnabled: false });
});
`;

function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

/** The page: relative links, resolved against `/docs`, land on `/docs/assets/…` and `/openapi.json`. */
export function apiReferenceHtml(title: string): string {
  const name = escapeHtml(title);
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${name} API reference</title>
<link rel="icon" type="image/png" href="docs/assets/favicon-32x32.png">
<link rel="stylesheet" href="docs/assets/swagger-ui.css">
</head>
<body>
<div id="api"></div>
<script src="docs/assets/swagger-ui-bundle.js"></script>
<script src="docs/assets/init.js"></script>
</body>
</html>
`;
}

function swaggerUiDir(): string {
  return dirname(createRequire(import.meta.url).resolve("swagger-ui-dist/package.json"));
}

/** Reads each asset at most once, on first request: a service nobody browses pays nothing. */
function assetSource(): (name: string) => Promise<Buffer> {
  const cache = new Map<string, Promise<Buffer>>();
  return (name) => {
    let asset = cache.get(name);
    if (asset === undefined) {
      asset =
        name === "init.js" ? Promise.resolve(Buffer.from(INIT_SCRIPT)) : readFile(join(swaggerUiDir(), name));
      cache.set(name, asset);
      // A failed read is retried next time instead of being cached as a failure.
      asset.catch(() => cache.delete(name));
    }
    return asset;
  };
}

export function registerApiReference(app: FastifyInstance, options: { title: string }): void {
  const html = apiReferenceHtml(options.title);
  const asset = assetSource();
  app.get(
    API_REFERENCE_PATH,
    {
      schema: {
        summary: "API reference: this document rendered by Swagger UI",
        tags: [OPS_TAG],
        response: {
          200: { description: "An HTML page", content: { "text/html": { schema: { type: "string" } } } },
        },
      },
    },
    async (_request, reply) => reply.type("text/html; charset=utf-8").send(html),
  );
  app.get<{ Params: { file: string } }>(
    `${API_REFERENCE_PATH}/assets/:file`,
    {
      config: { accessLog: "off" }, // a page view fetches four of them: the page's own line is the record
      schema: {
        hide: true,
        params: {
          type: "object",
          required: ["file"],
          properties: { file: { type: "string", enum: Object.keys(ASSETS) } },
        },
      },
    },
    async (request, reply) =>
      reply
        .type(ASSETS[request.params.file]!)
        .header("cache-control", `public, max-age=${ASSET_MAX_AGE_S}`)
        .send(await asset(request.params.file)),
  );
}
