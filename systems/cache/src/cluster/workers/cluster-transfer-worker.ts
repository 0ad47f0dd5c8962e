/**
 * The thread behind MIGRATE (see api/cluster-key-transfer.ts): it owns the sockets to
 * target nodes, sends one RESTORE frame, reads the one reply frame, and wakes the main
 * thread, which waits blocked on a shared flag — the node runs nothing else meanwhile,
 * exactly as Redis's MIGRATE blocks its server, so no client write can slip between the
 * copy and the delete of a key being moved.
 *
 * Bounds: one request at a time (the main thread is blocked while one runs), `timeoutMs`
 * per request, one cached connection per target, dropped on any error.
 *
 * @example
 * // started by KeyTransfer with workerData { signal: SharedArrayBuffer, port: MessagePort }
 */
import { connect, type Socket } from "node:net";
import { type MessagePort, workerData } from "node:worker_threads";
import { RespParser } from "../../api/resp-parser.ts";

export interface TransferRequest {
  readonly seq: number;
  readonly host: string;
  readonly port: number;
  readonly frame: Uint8Array;
  readonly timeoutMs: number;
}

export type TransferResult =
  | { readonly seq: number; readonly ok: true; readonly reply: string[] }
  | { readonly seq: number; readonly ok: false; readonly error: string };

interface Target {
  readonly socket: Socket;
  readonly parser: RespParser;
  waiting: ((reply: string[] | Error) => void) | undefined;
}

const { signal, port } = workerData as { signal: SharedArrayBuffer; port: MessagePort };
const flag = new Int32Array(signal);
const targets = new Map<string, Target>();

function open(host: string, targetPort: number): Target {
  const key = `${host}:${targetPort}`;
  const known = targets.get(key);
  if (known !== undefined && !known.socket.destroyed) return known;
  const socket = connect({ host, port: targetPort, noDelay: true });
  const target: Target = { socket, parser: new RespParser(), waiting: undefined };
  const fail = (error: Error) => {
    targets.delete(key);
    socket.destroy();
    target.waiting?.(error);
    target.waiting = undefined;
  };
  socket.on("data", (chunk: Buffer) => {
    try {
      target.parser.feed(chunk);
      const reply = target.parser.next();
      if (reply !== undefined) {
        target.waiting?.(reply);
        target.waiting = undefined;
      }
    } catch (error) {
      fail(error as Error);
    }
  });
  socket.on("error", fail);
  socket.on("close", () => fail(new Error("connection closed by the target")));
  targets.set(key, target);
  return target;
}

function transfer(request: TransferRequest): Promise<TransferResult> {
  return new Promise((resolve) => {
    const target = open(request.host, request.port);
    const timer = setTimeout(() => {
      target.waiting = undefined;
      target.socket.destroy();
      resolve({ seq: request.seq, ok: false, error: `no reply within ${request.timeoutMs} ms` });
    }, request.timeoutMs);
    target.waiting = (reply) => {
      clearTimeout(timer);
      if (reply instanceof Error) resolve({ seq: request.seq, ok: false, error: reply.message });
      else resolve({ seq: request.seq, ok: true, reply });
    };
    target.socket.write(request.frame);
  });
}

port.on("message", async (request: TransferRequest) => {
  const result = await transfer(request);
  port.postMessage(result);
  Atomics.store(flag, 0, request.seq);
  Atomics.notify(flag, 0);
});
