import { AsyncResource } from "node:async_hooks";

/**
 * Why a server process calls this once at startup: node's `process.nextTick` builds each queued callback as an
 * object literal keyed first by two internal symbols (`{ [async_id_symbol], [trigger_async_id_symbol], callback, args
 * }`, lib/internal/process/task_queues.js). V8 defines those keys through feedback that remembers the hidden class
 * (map) the object has at each key, and it holds those maps weakly. When the process idles, V8's memory reducer runs
 * a full garbage collection that keeps no dying map; if no tick object is alive at that moment (an idle server's tick
 * queue is empty), the maps die. The next `nextTick` makes new ones, finds its remembered maps gone, marks the
 * feedback megamorphic for good, and from then on every `nextTick` (several per HTTP request, from node:http and its
 * streams) defines its fields through the runtime: about 23k more instructions per `eth_blockNumber` under callgrind.
 * Whether it happened depended on when the idle collections fell, hence some processes and not others.
 *
 * Holding one object of the same shape for the life of the process keeps those maps alive, so the feedback stays
 * valid. The symbols are node's own, read from an `AsyncResource` (which carries the same two); the values are
 * doubles because node's ids come from a Float64Array, so the fields already hold doubles: a small integer in an
 * object built first would make them integer fields, and node's first double would then replace the maps held here.
 * On a node whose tick objects are shaped otherwise this holds one unrelated object and changes nothing.
 */
export function holdTickObjectShape(): void {
  if (held !== undefined) return;
  const symbols = Object.getOwnPropertySymbols(new AsyncResource("lightfleet-tick-shape"));
  const asyncId = symbols.find((s) => s.description === "async_id_symbol");
  const triggerAsyncId = symbols.find((s) => s.description === "trigger_async_id_symbol");
  if (asyncId === undefined || triggerAsyncId === undefined) return;
  // The same literal, in the same order, as node's: the same chain of maps from the empty object's.
  held = { [asyncId]: 0.5, [triggerAsyncId]: 0.5, callback: noop, args: undefined };
}

function noop(): void {}

let held: object | undefined;
