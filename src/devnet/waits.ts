import { HttpRpcClient } from "../rpc/httpRpcClient.js";

/** Resolves when `work` settles or after `ms`, whichever comes first. */
export async function settledWithin(work: Promise<unknown>, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const elapsed = new Promise<void>((resolve) => (timer = setTimeout(resolve, ms)));
  try {
    await Promise.race([work, elapsed]);
  } finally {
    clearTimeout(timer);
  }
}

/** Waits (briefly, 3 s at most) until a killed node stops answering, so a late answer is not taken for a restart. */
export async function untilUnreachable(httpUrl: string): Promise<void> {
  const deadline = Date.now() + 3_000;
  while (Date.now() < deadline) {
    const alive = await new HttpRpcClient(httpUrl, 200)
      .call("eth_chainId")
      .then(() => true)
      .catch(() => false);
    if (!alive) return;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}
