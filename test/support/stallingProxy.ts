import { createServer, Socket } from "node:net";
import type { AddressInfo } from "node:net";

export interface StallingProxy {
  /** The proxy's loopback port; `redis://127.0.0.1:PORT` reaches the server behind it. */
  port: number;
  /**
   * Stops forwarding, both ways, on every open connection whose client has sent `marker` so far (for Redis, the
   * name it gives itself with CLIENT SETNAME): packets stop, the sockets stay open. Connections opened later are
   * forwarded as usual. Answers how many connections it stalled.
   */
  stall(marker: string): number;
  /** Connections stalled and still open (neither side has closed them). */
  stalledOpen(): number;
  /** Closes every connection and the listener. */
  close(): Promise<void>;
}

interface Link {
  client: Socket;
  upstream: Socket;
  /** What the client sent, up to a few KiB: enough for its handshake. */
  hello: string;
  stalled: boolean;
}

/** A TCP proxy on 127.0.0.1 in front of `targetPort`, that can go silent on chosen connections without closing them. */
export async function startStallingProxy(targetPort: number): Promise<StallingProxy> {
  const links = new Set<Link>();
  const server = createServer((client) => {
    const upstream = new Socket();
    const link: Link = { client, upstream, hello: "", stalled: false };
    links.add(link);
    const drop = () => {
      client.destroy();
      upstream.destroy();
      links.delete(link);
    };
    client.on("data", (chunk: Buffer) => {
      if (link.hello.length < 4096) link.hello += chunk.toString("latin1");
      if (!link.stalled) upstream.write(chunk);
    });
    upstream.on("data", (chunk: Buffer) => {
      if (!link.stalled) client.write(chunk);
    });
    client.on("close", drop);
    upstream.on("close", drop);
    client.on("error", drop);
    upstream.on("error", drop);
    upstream.connect(targetPort, "127.0.0.1");
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    port: (server.address() as AddressInfo).port,
    stall(marker) {
      let stalled = 0;
      for (const link of links) {
        if (link.stalled || !link.hello.includes(marker)) continue;
        link.stalled = true;
        // Stop reading too: what either side sends from now on stays in the kernel's buffers, as on a dead path.
        link.client.pause();
        link.upstream.pause();
        stalled++;
      }
      return stalled;
    },
    stalledOpen() {
      return [...links].filter((l) => l.stalled && !l.client.destroyed && !l.upstream.destroyed).length;
    },
    async close() {
      for (const link of links) {
        link.client.destroy();
        link.upstream.destroy();
      }
      links.clear();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
