/**
 * A RESP node on loopback that answers every command from a script, for the races a real
 * cluster reaches only by timing (a map reload that meets a node's stale or half-updated view).
 *
 * @example
 * const node = await scriptedNode((args) => (args[0] === "GET" ? bulk("v") : "+OK\r\n"));
 * node.port; node.gets; await node.close();
 */
import { createServer, type Socket } from "node:net";
import { RespParser } from "../src/api/resp-parser.ts";

export const bulk = (value: string) => `$${Buffer.byteLength(value)}\r\n${value}\r\n`;

/** One CLUSTER SLOTS range: `[first, last]` owned by the node on `port` of 127.0.0.1. */
export type SlotRange = readonly [first: number, last: number, port: number];

/** A CLUSTER SLOTS reply listing `ranges` (a slot in none has no owner). */
export function clusterSlots(ranges: readonly SlotRange[]): string {
  const rows = ranges.map(
    ([first, last, port]) => `*3\r\n:${first}\r\n:${last}\r\n*2\r\n${bulk("127.0.0.1")}:${port}\r\n`,
  );
  return `*${rows.length}\r\n${rows.join("")}`;
}

/** CLUSTER SLOTS naming `port` the owner of every slot. */
export const allSlotsTo = (port: number) => clusterSlots([[0, 16383, port]]);

export interface ScriptedNode {
  readonly port: number;
  /** GETs answered so far. */
  readonly gets: number;
  close(): Promise<void>;
}

/** A node answering each command with `answer(args)` (RESP text), counting GETs. */
export async function scriptedNode(answer: (args: string[]) => string): Promise<ScriptedNode> {
  let gets = 0;
  const sockets = new Set<Socket>();
  const server = createServer((socket: Socket) => {
    sockets.add(socket);
    socket.once("close", () => sockets.delete(socket));
    const parser = new RespParser();
    socket.on("data", (chunk) => {
      parser.feed(chunk);
      for (let args = parser.next(); args !== undefined; args = parser.next()) {
        if (args[0]!.toUpperCase() === "GET") gets++;
        socket.write(answer(args));
      }
    });
    socket.on("error", () => {});
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as { port: number }).port;
  return {
    port,
    get gets() {
      return gets;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        for (const socket of sockets) socket.destroy();
      }),
  };
}
