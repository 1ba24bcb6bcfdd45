#!/usr/bin/env node
import { Command } from "commander";
import { failAndExit } from "./cli/fail.js";
import { holdTickObjectShape } from "./process/holdTickObjectShape.js";
import { registerConfigCommand } from "./cli/commands/configCommand.js";
import { registerDevnetCommand } from "./cli/commands/devnetCommand.js";
import { registerControllerCommand } from "./cli/commands/controllerCommand.js";
import { registerGatewayCommand } from "./cli/commands/gatewayCommand.js";
import { registerKeysCommand } from "./cli/commands/keysCommand.js";
import { registerNodeCommand } from "./cli/commands/nodeCommand.js";
import { registerUpCommand } from "./cli/commands/upCommand.js";
import { VERSION } from "./version.js";

// Each concern registers its own subcommand; heavy modules are imported inside the actions so that
// `lightfleet config check` starts fast.
const program = new Command("lightfleet")
  .description("light-node fleet orchestrator, health controller and public JSON-RPC gateway")
  .version(VERSION)
  .showHelpAfterError()
  // Options belong to the command they follow, so `keys-api --config F` and `keys-api user add --config F` both work.
  .enablePositionalOptions()
  .exitOverride((error) => {
    process.exit(error.exitCode === 0 ? 0 : 2);
  });

// Every command's process (gateway, its workers, controller, key API, up) idles at times: this keeps node's
// process.nextTick on its fast path after an idle full collection (see the function).
holdTickObjectShape();

registerConfigCommand(program);
registerDevnetCommand(program);
registerControllerCommand(program);
registerGatewayCommand(program);
registerKeysCommand(program);
registerNodeCommand(program);
registerUpCommand(program);

program.parseAsync(process.argv).catch(failAndExit);
