/**
 * `npm start`'s prestart step: builds the console's front end when it is stale, showing
 * Vite's progress (a fresh clone's first start), bounded in time. A failed build does not
 * stop `npm start`: every system still runs, and the console says how to build its page.
 *
 * @example
 * // node packages/console/src/build-web.ts [--force]
 */
import { ensureWebBuilt } from "./web-build.ts";

try {
  await ensureWebBuilt({
    log: (line) => process.stderr.write(`${line}\n`),
    force: process.argv.includes("--force"),
  });
} catch (error) {
  process.stderr.write(`console: the front end was not built: ${(error as Error).message}\n`);
}
