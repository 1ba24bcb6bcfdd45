// `node --import THIS_FILE ...`: records every module the program resolves (one URL a line) in the file named by
// LIGHTFLEET_RECORD_IMPORTS, so a test can tell which packages a command loads.
import { register } from "node:module";
import process from "node:process";

register("./recordImportsHooks.mjs", import.meta.url, {
  data: { file: process.env.LIGHTFLEET_RECORD_IMPORTS },
});
