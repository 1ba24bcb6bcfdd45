import type { UpComponent } from "./component.js";
import { controllerComponent } from "./controllerComponent.js";
import { devnetComponent } from "./devnetComponent.js";
import { fleetComponent } from "./fleetComponent.js";
import { gatewayComponent } from "./gatewayComponent.js";
import { keysComponent } from "./keysComponent.js";
import { scalingComponent } from "./scalingComponent.js";

/**
 * The parts of `lightfleet up`, started in this order and stopped in reverse. A new part (the gateway, the key API)
 * adds one entry here; it finds the devnet, fleet and controller in the context it is handed. The autoscaler reads
 * `context.gateway` (its request counters), so the gateway starts before it.
 */
export const UP_COMPONENTS: ReadonlyArray<UpComponent> = [
  devnetComponent,
  fleetComponent,
  controllerComponent,
  gatewayComponent,
  scalingComponent,
  keysComponent,
];
