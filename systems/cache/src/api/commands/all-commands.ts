/**
 * Every command this node serves, as one table (part 2 adds CLUSTER, READONLY, ASKING).
 *
 * @example
 * const table = createCommandTable(allCommands);
 */
import { commandCommand } from "./command-command.ts";
import type { CommandSpec } from "./command-spec.ts";
import { configCommand } from "./config-command.ts";
import { connectionCommands } from "./connection-commands.ts";
import { infoCommand } from "./info-command.ts";
import { keyCommands } from "./key-commands.ts";
import { stringCommands } from "./string-commands.ts";

export const allCommands: readonly CommandSpec[] = [
  ...stringCommands,
  ...keyCommands,
  ...connectionCommands,
  infoCommand,
  configCommand,
  commandCommand,
];
