import { describe, expect, it } from "vitest";
import { whenChanged } from "../../../src/gateway/cluster/messages.js";
import type { WorkerStatus } from "../../../src/gateway/cluster/messages.js";

const status = (head: number | null, slicesSynced?: number): WorkerStatus => ({
  kind: "lightfleet-gateway-status",
  url: "http://127.0.0.1:1",
  heads: { mainnet: head },
  ...(slicesSynced === undefined ? {} : { slicesSynced }),
});

describe("a worker's status to the primary", () => {
  it("is sent at first and then only when it changes, so an idle worker does not wake the primary twice a second", () => {
    const sent: WorkerStatus[] = [];
    const report = whenChanged((message: WorkerStatus) => sent.push(message));
    report(status(null));
    report(status(null));
    report(status(7));
    report(status(7));
    report(status(7, 1_000));
    report(status(7, 1_000));
    report(status(8, 1_000));
    expect(sent).toEqual([status(null), status(7), status(7, 1_000), status(8, 1_000)]);
  });
});
