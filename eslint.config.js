import js from "@eslint/js";
import boundaries from "eslint-plugin-boundaries";
import globals from "globals";
import tseslint from "typescript-eslint";
import { layerRules } from "./eslint/layers.js";

export default tseslint.config(
  {
    ignores: [
      "dist/**",
      "node_modules/**",
      "data/**",
      "coverage/**",
      "test-artifacts/**",
      "charts/**",
      "manifests/**",
    ],
  },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    rules: {
      "@typescript-eslint/no-unused-vars": ["error", { argsIgnorePattern: "^_", varsIgnorePattern: "^_" }],
      "@typescript-eslint/consistent-type-imports": "error",
      "no-console": "off",
    },
  },
  {
    files: ["src/**/*.ts", "bench/**/*.ts"],
    rules: {
      "no-restricted-syntax": [
        "error",
        {
          selector: "CallExpression[callee.type='MemberExpression'][callee.property.name='makeApiClient']",
          message:
            "Use makeApiClient(kubeConfig, Api) from src/kubernetes/api/kubeClients.ts: its calls reuse connections.",
        },
      ],
    },
  },
  {
    // The key page's script runs in the browser, as a module script.
    files: ["src/keys/web/browser/**/*.js"],
    languageOptions: { globals: globals.browser, sourceType: "module" },
  },
  layerRules(boundaries),
);
