/**
 * The flags node runs every lightfleet service with: the image's ENTRYPOINT (`node FLAGS dist/cli.js`), and the
 * gateway the benches measure, which runs as the image runs it.
 *
 * `--single-threaded-gc`: V8 collects garbage on the thread whose garbage it is, with no helper threads. A service's
 * JavaScript runs on one thread, and the chart gives it about a core for that thread (the gateway a core per worker,
 * `gateway.workers: auto`): V8's parallel scavenges and concurrent marking then hand work to helper threads that need
 * the same core, and the main thread waits on them. One core each, it cut the gateway's CPU per forwarded call by
 * 17% and per `eth_blockNumber` by 6% (docs/performance.md, "Node's flags").
 */
export const SERVICE_NODE_FLAGS: readonly string[] = ["--single-threaded-gc"];
