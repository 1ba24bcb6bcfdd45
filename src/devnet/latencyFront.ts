import http from "node:http";
import type { AddressInfo } from "node:net";
import type { Duplex } from "node:stream";
import { WebSocket, WebSocketServer } from "ws";
import type { RawData } from "ws";

/**
 * A front the devnet puts before a light node: it passes JSON-RPC over HTTP and WebSocket through unchanged, except
 * that a call `delayFor` gives a delay (a state read while the node is `slow`) reaches the node that much later. So a
 * client sees the node's own answers, as late as a light node fetching state from its peers would give them. A node
 * that is down behind it looks down: the front drops the client's connection.
 */
export interface LatencyFront {
  httpUrl: string;
  wsUrl: string;
  stop(): Promise<void>;
}

export interface LatencyFrontOptions {
  /** The node's own URLs. */
  httpUrl: string;
  wsUrl: string;
  host?: string;
  /** Milliseconds to hold a call of these methods before passing it on (0: at once). */
  delayFor(methods: readonly string[]): number;
}

/** Largest HTTP body the front reads (the gateway's own limit is 1 MiB). */
const MAX_BODY_BYTES = 8 * 1024 * 1024;

export async function startLatencyFront(options: LatencyFrontOptions): Promise<LatencyFront> {
  const target = new URL(options.httpUrl);
  const agent = new http.Agent({ keepAlive: true, maxSockets: 256 });
  const timers = new Set<NodeJS.Timeout>();
  const sockets = new Set<WebSocket>();
  const later = (ms: number, task: () => void) => {
    if (ms <= 0) return task();
    const timer = setTimeout(() => {
      timers.delete(timer);
      task();
    }, ms);
    timers.add(timer);
  };

  const server = http.createServer((req, res) => {
    // A client that goes away mid-call is no error of the front's.
    req.on("error", () => res.destroy());
    res.on("error", () => undefined);
    const chunks: Buffer[] = [];
    let size = 0;
    req.on("data", (chunk: Buffer) => {
      size += chunk.length;
      if (size > MAX_BODY_BYTES) req.destroy();
      else chunks.push(chunk);
    });
    req.on("end", () => {
      const body = Buffer.concat(chunks);
      later(options.delayFor(methodsOf(body)), () => {
        const upstream = http.request(
          {
            host: target.hostname,
            port: target.port,
            path: req.url,
            method: req.method,
            agent,
            headers: { "content-type": req.headers["content-type"] ?? "application/json" },
          },
          (answer) => {
            answer.on("error", () => res.destroy());
            res.writeHead(answer.statusCode ?? 502, answer.headers);
            answer.pipe(res);
          },
        );
        // The node is not there: neither is its front, as far as the client can tell.
        upstream.on("error", () => res.socket?.destroy());
        upstream.end(body);
      });
    });
  });

  const wss = new WebSocketServer({ noServer: true });
  server.on("upgrade", (req: http.IncomingMessage, socket: Duplex, head: Buffer) => {
    const upstream = new WebSocket(options.wsUrl);
    upstream.once("error", () => socket.destroy());
    upstream.once("open", () => {
      wss.handleUpgrade(req, socket, head, (client) => pair(client, upstream));
    });
  });

  const pair = (client: WebSocket, upstream: WebSocket) => {
    sockets.add(client).add(upstream);
    const closeBoth = () => {
      sockets.delete(client);
      sockets.delete(upstream);
      client.terminate();
      upstream.terminate();
    };
    client.on("message", (data: RawData, binary: boolean) => {
      later(options.delayFor(methodsOf(data)), () => {
        if (upstream.readyState === WebSocket.OPEN) upstream.send(data, { binary });
      });
    });
    upstream.on("message", (data: RawData, binary: boolean) => {
      if (client.readyState === WebSocket.OPEN) client.send(data, { binary });
    });
    for (const socket of [client, upstream]) {
      socket.on("close", closeBoth);
      socket.on("error", closeBoth);
    }
  };

  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, options.host ?? "127.0.0.1", () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  const host = options.host ?? "127.0.0.1";
  return {
    httpUrl: `http://${host}:${port}`,
    wsUrl: `ws://${host}:${port}`,
    async stop() {
      for (const timer of timers) clearTimeout(timer);
      timers.clear();
      for (const socket of sockets) socket.terminate();
      sockets.clear();
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeAllConnections();
      agent.destroy();
      await closed;
    },
  };
}

/** The methods of a JSON-RPC call or batch (none for anything else). */
export function methodsOf(data: RawData | Buffer): string[] {
  const bytes = Array.isArray(data)
    ? Buffer.concat(data)
    : Buffer.isBuffer(data)
      ? data
      : Buffer.from(new Uint8Array(data));
  const text = bytes.toString("utf8");
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    return [];
  }
  const items = Array.isArray(body) ? body : [body];
  const methods: string[] = [];
  for (const item of items) {
    const method = (item as { method?: unknown } | null)?.method;
    if (typeof method === "string") methods.push(method);
  }
  return methods;
}
