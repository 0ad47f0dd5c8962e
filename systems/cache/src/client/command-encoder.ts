/**
 * Encodes a command the way every Redis client sends it: an array of bulk strings
 * (`*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\nv\r\n`). The result is a string, so a batch of
 * pipelined commands is joined and written with one `socket.write(text, encoding)`:
 * one syscall and one copy into the kernel for the whole batch.
 *
 * Lengths are byte lengths in the connection's encoding: UTF-8 for application text,
 * latin1 when each char already stands for one byte (a proxy relaying binary values).
 *
 * @example
 * encodeCommand(["GET", "event:42"], "utf8"); // "*2\r\n$3\r\nGET\r\n$8\r\nevent:42\r\n"
 * commandBytes(["GET", "é"], "utf8");          // 21: "é" is two bytes in UTF-8
 */

export type WireEncoding = "utf8" | "latin1";

function byteLength(arg: string, encoding: WireEncoding): number {
  return encoding === "latin1" ? arg.length : Buffer.byteLength(arg, "utf8");
}

/** The RESP text of one command. */
export function encodeCommand(args: readonly string[], encoding: WireEncoding): string {
  let text = `*${args.length}\r\n`;
  for (const arg of args) text += `$${byteLength(arg, encoding)}\r\n${arg}\r\n`;
  return text;
}

/** Bytes `encodeCommand(args)` occupies on the wire (for batch bounds and big-key checks). */
export function commandBytes(args: readonly string[], encoding: WireEncoding): number {
  let bytes = 3 + String(args.length).length;
  for (const arg of args) {
    const length = byteLength(arg, encoding);
    bytes += 5 + String(length).length + length;
  }
  return bytes;
}
