/**
 * The header of one unmasked, final WebSocket text frame of `length` payload bytes (RFC 6455 section 5.2), as a server
 * sends it: with it the gateway frames a notification once and writes the same bytes to every subscriber's socket.
 */
export function textFrameHeader(length: number): Buffer {
  if (!Number.isSafeInteger(length) || length < 0) throw new RangeError(`invalid frame length ${length}`);
  // FIN and opcode 1 (text); no RSV bits: the gateway's WebSocket server does not negotiate permessage-deflate.
  const FIN_TEXT = 0x81;
  if (length < 126) return Buffer.from([FIN_TEXT, length]);
  if (length < 65_536) {
    const header = Buffer.allocUnsafe(4);
    header[0] = FIN_TEXT;
    header[1] = 126;
    header.writeUInt16BE(length, 2);
    return header;
  }
  const header = Buffer.allocUnsafe(10);
  header[0] = FIN_TEXT;
  header[1] = 127;
  header.writeBigUInt64BE(BigInt(length), 2);
  return header;
}
