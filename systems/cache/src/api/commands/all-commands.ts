/**
 * Every command this node serves, as one table (part 2 adds CLUSTER, READONLY, ASKING).
 *
 * @example
 * const table = createCommandTable(allCommands);
 */
import { aclCommands } from "./acl-commands.ts";
import { commandCommand } from "./command-command.ts";
import type { CommandSpec } from "./command-spec.ts";
import { configCommand } from "./config-command.ts";
import { connectionCommands } from "./connection-commands.ts";
import { infoCommand } from "./info-command.ts";
import { keyCommands } from "./key-commands.ts";
import { memoryCommand } from "./memory-command.ts";
import { objectCommand } from "./object-command.ts";
import { scanCommands } from "./scan-command.ts";
import { stringCommands } from "./string-commands.ts";
import { stringExpiryCommands } from "./string-expiry-commands.ts";
import { timeCommand } from "./time-command.ts";

export const allCommands: readonly CommandSpec[] = [
  ...stringCommands,
  ...stringExpiryCommands,
  ...keyCommands,
  ...scanCommands,
  objectCommand,
  memoryCommand,
  timeCommand,
  ...connectionCommands,
  ...aclCommands,
  infoCommand,
  configCommand,
  commandCommand,
];
