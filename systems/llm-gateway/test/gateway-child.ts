/**
 * One gateway as its own OS process, for the races: main() with this process's environment;
 * prints `ready <url> <bootstrap key or ->` once it listens; SIGTERM drains it (LG-15) and exits 0.
 */
import { main } from "../src/main.ts";

const running = await main();
process.stdout.write(`ready ${running.url} ${running.bootstrap?.apiKey ?? "-"}\n`);
process.once("SIGTERM", () => {
  void running.close().finally(() => process.exit(0));
});
