/**
 * Redis's error replies, word for word: clients and tests match on these strings
 * (ioredis retries on some, redis-cli prints them), so they are not ours to reword.
 *
 * @example
 * writer.error(REPLY_ERRORS.syntax);                 // -ERR syntax error
 * writer.error(arityError("get"));                   // -ERR wrong number of arguments for 'get' command
 */

export const REPLY_ERRORS = {
  syntax: "ERR syntax error",
  notInteger: "ERR value is not an integer or out of range",
  overflow: "ERR increment or decrement would overflow",
  notFloat: "ERR value is not a valid float",
  floatOverflow: "ERR increment would produce NaN or Infinity",
  decrementOverflow: "ERR decrement would overflow",
  oom: "OOM command not allowed when used memory > 'maxmemory'.",
  dbIndex: "ERR DB index is out of range",
  noProto: "NOPROTO unsupported protocol version",
  helloVersion: "ERR Protocol version is not an integer or out of range",
  clientName: "ERR Client names cannot contain spaces, newlines or special characters.",
  maxClients: "ERR max number of clients reached",
} as const;

/** Longest argument echoed in an error, as Redis's `%.128s`. */
const ECHO_CHARS = 128;

export function arityError(fullName: string): string {
  return `ERR wrong number of arguments for '${fullName}' command`;
}

export function invalidExpireError(command: string): string {
  return `ERR invalid expire time in '${command}' command`;
}

/** Redis's unknown-command reply: the name, then arguments quoted while the list is under 128 chars. */
export function unknownCommandError(args: readonly string[]): string {
  let listed = "";
  for (let i = 1; i < args.length && listed.length < ECHO_CHARS; i++) {
    listed += `'${args[i]!.slice(0, ECHO_CHARS - listed.length)}' `;
  }
  return `ERR unknown command '${args[0]!.slice(0, ECHO_CHARS)}', with args beginning with: ${listed}`;
}

export function unknownSubcommandError(container: string, subcommand: string): string {
  return `ERR unknown subcommand '${subcommand.slice(0, ECHO_CHARS)}'. Try ${container.toUpperCase()} HELP.`;
}
