/**
 * A routed frame's WebSocket text frames, built ONCE for every socket that receives it
 * (RFC 6455 §5.2; a server's frames are never masked, so the same bytes are valid on every
 * connection). A group's message reaches hundreds of sockets on one gateway: framing it per
 * socket (ws's `send`: a header buffer, two buffered writes, its checks) was ~13 % of a
 * saturated gateway's time; socket.io's engine pre-encodes the same way.
 *
 * Only for connections without permessage-deflate (the gateway turns it off): with it, the
 * payload would have to be compressed per socket's context.
 *
 * @example
 * const frames = textFrames(['{"action":"message"}']); // one Buffer per frame: header + payload
 * for (const frame of frames) socket.write(frame);
 */

/** FIN set, opcode 0x1 (text): a whole text message in one frame. */
const FIN_TEXT = 0x81;

/** Each text as one complete, unmasked text frame: the header and the UTF-8 payload in one Buffer. */
export function textFrames(texts: readonly string[]): Buffer[] {
  return texts.map(textFrame);
}

function textFrame(text: string): Buffer {
  const length = Buffer.byteLength(text, "utf8");
  const headerLength = length < 126 ? 2 : length < 65_536 ? 4 : 10;
  const frame = Buffer.allocUnsafe(headerLength + length);
  frame[0] = FIN_TEXT;
  if (headerLength === 2) frame[1] = length;
  else if (headerLength === 4) {
    frame[1] = 126;
    frame.writeUInt16BE(length, 2);
  } else {
    frame[1] = 127;
    frame.writeBigUInt64BE(BigInt(length), 2);
  }
  frame.write(text, headerLength, "utf8");
  return frame;
}
