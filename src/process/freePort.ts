import { createServer } from "node:net";
import type { AddressInfo } from "node:net";

/** Asks the OS for a free TCP port on 127.0.0.1 (free now; the member binds it right after). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as AddressInfo;
      server.close(() => resolve(port));
    });
  });
}
