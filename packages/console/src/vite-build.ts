/**
 * The Vite build of the console's front end, run as a child by web-build.ts (never imported
 * by the service): `web/` → `dist/web/`, served under `/app/`. Preact's JSX through Vite's
 * own transform (no plugin). The stamp is written last, so an interrupted build is redone.
 */
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { build } from "vite";
import { distDir, newestInputMs, webDir } from "./web-build.ts";

const inputsMs = newestInputMs();
await build({
  root: webDir,
  base: "/app/",
  configFile: false,
  logLevel: "info",
  clearScreen: false,
  oxc: { jsx: { runtime: "automatic", importSource: "preact" } },
  build: { outDir: distDir, emptyOutDir: true, sourcemap: false, chunkSizeWarningLimit: 1_000 },
});
writeFileSync(join(distDir, ".built-from"), `${inputsMs}\n`);
