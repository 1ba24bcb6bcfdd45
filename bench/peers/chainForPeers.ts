/**
 * proxyd's consensus poller takes a backend only once its `safe` and `finalized` blocks are above 0; anvil's trail its
 * head (by 32 and 64 blocks), so on a chain of a few blocks every proxyd call is -32011 "no backend is currently
 * healthy to serve traffic". Mines one block at a time until the node reports a finalized block above 0, asking the
 * node rather than assuming its depth. Bounded by `maxBlocks`; returns the blocks mined.
 */
export async function mineUntilFinalized(
  mine: () => Promise<unknown>,
  nodeHttpUrl: string,
  maxBlocks = 256,
): Promise<number> {
  for (let mined = 0; ; mined++) {
    if ((await blockNumber(nodeHttpUrl, "finalized")) > 0) return mined;
    if (mined >= maxBlocks)
      throw new Error(`the node's finalized block is still 0 after ${maxBlocks} blocks were mined`);
    await mine();
  }
}

async function blockNumber(url: string, tag: string): Promise<number> {
  const response = await fetch(url, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "eth_getBlockByNumber", params: [tag, false] }),
  });
  const answer = (await response.json()) as { result?: { number?: string } | null };
  return Number(answer.result?.number ?? 0);
}
