// Preloaded (`--import`) into a node process started with --allow-natives-syntax and --expose-gc. On SIGUSR2 (or at
// once with NEXT_TICK_PROBE_NOW=1) it plays what an idle server goes through: process.nextTick warmed up and optimized,
// then full collections while no tick object is alive (as V8's memory reducer runs them when the process idles), then
// nextTick again. It then prints V8's view of nextTick (%DebugPrint: the state of each feedback slot) and the line
// "next-tick-probe done". A slot of nextTick's tick-object literal printed MEGAMORPHIC is the slow path: every
// nextTick defining its fields through the runtime. %DebugPrint writes with C stdio: give the process a file as
// stdout, not a pipe (node makes pipes non-blocking and the print is cut short).
import { writeSync } from "node:fs";
import process from "node:process";
import { setTimeout } from "node:timers";

const natives = (body) => new Function("f", body);
const prepare = natives("%PrepareFunctionForOptimization(f)");
const optimizeNext = natives("%OptimizeFunctionOnNextCall(f)");
const debugPrint = natives("%DebugPrint(f)");
const noop = () => {};
const ticks = (count) => {
  for (let i = 0; i < count; i++) process.nextTick(noop);
};
const later = (then) => setTimeout(then, 10);

function probe() {
  ticks(10);
  later(() => {
    prepare(process.nextTick);
    ticks(10);
    optimizeNext(process.nextTick);
    ticks(10);
    later(() => {
      // Nothing queued now: collections as an idle process gets them (a dying map is kept for two, so five).
      for (let i = 0; i < 5; i++) globalThis.gc();
      later(() => {
        ticks(10);
        later(() => {
          debugPrint(process.nextTick);
          writeSync(1, "next-tick-probe done\n");
        });
      });
    });
  });
}

process.on("SIGUSR2", probe);
if (process.env.NEXT_TICK_PROBE_NOW === "1") probe();
