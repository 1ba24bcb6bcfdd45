import { connect } from "node:net";
import type { NetConnectOpts, Socket } from "node:net";

/** The most one read takes: what node gives a stream read by default. */
const READ_BUFFER_BYTES = 64 * 1024;

/**
 * A TCP connection (ws's `createConnection`, for a `ws:` URL) that reads into one buffer of its own, kept for the
 * connection's life. By default node gives every read a new 64 KiB buffer, zero-filled, then cut to the bytes read:
 * on a calls WebSocket that is one read for every few answers, and the zero-filling alone cost more than ws's parsing
 * of the frames in it. Each read's bytes are copied out to a buffer of their own size (ws keeps the first part of a
 * frame until its rest comes, so the one buffer cannot be handed on) and given to the socket's `data` listeners as
 * the read's chunk, without going through the stream's buffering. Pausing, end, errors and close are a socket's.
 */
export function oneBufferConnection(options: NetConnectOpts): Socket {
  const buffer = Buffer.allocUnsafe(READ_BUFFER_BYTES);
  const socket = connect({
    ...options,
    // ws sets `path` to the request's path; on a connection it would name a Unix socket (ws's own netConnect does the
    // same).
    path: (options as { socketPath?: string }).socketPath,
    onread: {
      buffer,
      callback: (bytes: number) => {
        const chunk = Buffer.allocUnsafe(bytes);
        buffer.copy(chunk, 0, 0, bytes);
        socket.emit("data", chunk);
        return true;
      },
    },
  } as NetConnectOpts);
  return socket;
}
