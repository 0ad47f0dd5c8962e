/**
 * One gateway as its own OS process, for the races: main() with this process's environment;
 * prints `ready <url>` once it listens, stops on SIGTERM.
 */
import { main } from "../src/main.ts";

const running = await main();
process.stdout.write(`ready ${running.url}\n`);
process.once("SIGTERM", () => {
  void running.close().finally(() => process.exit(0));
});
