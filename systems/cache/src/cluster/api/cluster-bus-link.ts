/**
 * One cluster bus connection between two of our nodes. Frames are RESP arrays of bulk
 * strings both ways (`*2 $4 PING $312 {…header…}`), so the node's own incremental parser
 * (with its bounds) reads them and keys and values pass as latin1 bytes, binary safe.
 * The same link type carries gossip (PING/PONG/MEET/FAIL), election votes, the
 * replication stream and migrating keys; whoever owns the link sets `onFrame`.
 *
 * Bounds: the parser's RespLimits on input; `maxOutputBytes` of unsent frames, past
 * which the link is dropped (a peer that does not read cannot grow this node's memory;
 * it reconnects and resyncs).
 *
 * @example
 * const link = connectBusLink({ host: "127.0.0.1", port: 17001, connectTimeoutMs: 500 });
 * link.onFrame = (frame) => console.log(frame[0]);   // "PONG"
 * link.send(["PING", JSON.stringify(header)]);
 */
import { connect, type Socket } from "node:net";
import { defaultRespLimits, type RespLimits, RespParser } from "../../api/resp-parser.ts";

export type Frame = readonly string[];

/** Encodes `parts` as one RESP array of bulk strings (latin1: one byte per char). */
export function encodeFrame(parts: readonly string[]): Buffer {
  let size = 3 + String(parts.length).length;
  for (const part of parts) size += 5 + String(part.length).length + part.length;
  const buf = Buffer.allocUnsafe(size);
  let pos = buf.write(`*${parts.length}\r\n`, 0, "latin1");
  for (const part of parts) {
    pos += buf.write(`$${part.length}\r\n`, pos, "latin1");
    pos += buf.write(part, pos, "latin1");
    buf[pos++] = 13;
    buf[pos++] = 10;
  }
  return buf.subarray(0, pos);
}

export interface BusLinkOptions {
  readonly limits?: RespLimits;
  /** Unsent bytes after which the link is dropped. Default 64 MiB. */
  readonly maxOutputBytes?: number;
}

export const DEFAULT_BUS_OUTPUT_BYTES = 64 * 1024 * 1024;

export class BusLink {
  readonly socket: Socket;
  readonly inbound: boolean;
  /** The node at the other end, once known. */
  peerId: string | undefined;
  onFrame: (frame: Frame, link: BusLink) => void = () => {};
  onClose: (link: BusLink) => void = () => {};
  /** A handler threw: the link is closed, and the error reported here (a bug, or a peer's bad frame). */
  onError: (error: unknown, link: BusLink) => void = () => {};
  readonly #parser: RespParser;
  readonly #maxOutputBytes: number;
  #closed = false;

  constructor(socket: Socket, inbound: boolean, options: BusLinkOptions = {}) {
    this.socket = socket;
    this.inbound = inbound;
    this.#parser = new RespParser(options.limits ?? defaultRespLimits);
    this.#maxOutputBytes = options.maxOutputBytes ?? DEFAULT_BUS_OUTPUT_BYTES;
    socket.setNoDelay(true);
    socket.on("data", (chunk: Buffer) => this.#onData(chunk));
    socket.on("error", () => socket.destroy());
    socket.once("close", () => {
      this.#closed = true;
      this.onClose(this);
    });
  }

  get closed(): boolean {
    return this.#closed || this.socket.destroyed;
  }

  /** True once the TCP connection is up (outbound links connect in the background). */
  get connected(): boolean {
    return !this.closed && !this.socket.connecting;
  }

  get pendingOutputBytes(): number {
    return this.socket.writableLength;
  }

  /** Queues a frame; false (and the link is dropped) when the peer is not reading. */
  send(parts: readonly string[]): boolean {
    return this.sendEncoded(encodeFrame(parts));
  }

  sendEncoded(frame: Buffer): boolean {
    if (this.closed) return false;
    this.socket.write(frame);
    if (this.socket.writableLength > this.#maxOutputBytes) {
      this.close();
      return false;
    }
    return true;
  }

  close(): void {
    if (!this.socket.destroyed) this.socket.destroy();
    this.#closed = true;
  }

  #onData(chunk: Buffer): void {
    if (this.#closed) return;
    try {
      this.#parser.feed(chunk);
      for (let frame = this.#parser.next(); frame !== undefined; frame = this.#parser.next()) {
        this.onFrame(frame, this);
        if (this.#closed) return;
      }
    } catch (error) {
      // Bytes that are not frames, or a frame a handler rejected: this link is unusable.
      this.close();
      this.onError(error, this);
    }
  }
}

export interface BusConnectOptions extends BusLinkOptions {
  readonly host: string;
  readonly port: number;
  /** Bound on the TCP connect; the link closes after it. */
  readonly connectTimeoutMs: number;
}

/** Opens an outbound link; frames sent before it connects are queued by the socket. */
export function connectBusLink(options: BusConnectOptions): BusLink {
  const socket = connect({ host: options.host, port: options.port, noDelay: true, keepAlive: true });
  socket.setTimeout(options.connectTimeoutMs, () => socket.destroy());
  socket.once("connect", () => socket.setTimeout(0));
  return new BusLink(socket, false, options);
}
