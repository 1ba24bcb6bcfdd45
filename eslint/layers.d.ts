import type { Linter } from "eslint";

export declare const LAYERS: string[][];
export declare function layerRules(boundaries: unknown): Linter.Config;
