/**
 * The built front end (`dist/web/`) under `/app/`: index.html for `/app/`, the hashed assets
 * Vite wrote with a year's cache (their names change with their content). Only files inside
 * dist/web are served; anything else is 404. Before the first build, `/app/` says how to build.
 *
 * @example
 * registerStaticAssets(service.app, { dir: distDir });
 */
import { existsSync, readFileSync, statSync } from "node:fs";
import { extname, join, resolve, sep } from "node:path";
import type { FastifyInstance } from "fastify";
import { consoleErrors } from "./console-errors.ts";

const contentTypes: Record<string, string> = {
  ".html": "text/html; charset=utf-8",
  ".js": "text/javascript; charset=utf-8",
  ".css": "text/css; charset=utf-8",
  ".svg": "image/svg+xml",
  ".png": "image/png",
  ".json": "application/json",
};

export function registerStaticAssets(app: FastifyInstance, options: { dir: string }): void {
  const root = resolve(options.dir);
  const send = (relativePath: string) => {
    const path = resolve(join(root, relativePath));
    if (!path.startsWith(root + sep) || !existsSync(path) || !statSync(path).isFile()) return undefined;
    return { body: readFileSync(path), type: contentTypes[extname(path)] ?? "application/octet-stream" };
  };
  const hide = { schema: { hide: true } };
  app.get("/app", hide, async (_request, reply) => reply.redirect("app/", 302));
  app.get("/app/", hide, async (_request, reply) => {
    const file = send("index.html");
    if (file === undefined) throw consoleErrors.create("CONSOLE_NOT_BUILT");
    return reply.type(file.type).header("cache-control", "no-cache").send(file.body);
  });
  app.get<{ Params: { "*": string } }>("/app/*", hide, async (request, reply) => {
    const file = send(request.params["*"]);
    if (file === undefined) throw consoleErrors.create("CONSOLE_ASSET_NOT_FOUND");
    return reply
      .type(file.type)
      .header("cache-control", "public, max-age=31536000, immutable")
      .send(file.body);
  });
}
