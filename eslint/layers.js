/**
 * The layers of src/, bottom first: a folder may import folders of the layers below its own, never a folder of its
 * own layer or of one above. docs/layers.md draws the same list (test/lint/layers.test.ts checks that it does).
 * A file directly in src/ counts as the folder of its name (cli.ts as cli/, version.ts on its own).
 */
export const LAYERS = [
  ["chain", "config", "version"],
  ["log"],
  ["process", "admin", "rpc"],
  ["health"],
  ["metrics"],
  ["probe", "fleet"],
  ["controller", "scaling"],
  ["kubernetes"],
  ["gateway", "keys", "devnet"],
  ["node"],
  ["up"],
  ["cli"],
];

// A folder pattern for src/NAME/, and a file pattern (the plugin's `mode: "file"`) for src/NAME.ts.
const elements = LAYERS.flat().flatMap((name) => [
  { type: name, pattern: `src/${name}` },
  { type: name, pattern: `src/${name}.ts`, mode: "file" },
]);

/** The boundaries plugin's settings and rule: each folder is an element; imports only go down the list. */
export function layerRules(boundaries) {
  return {
    files: ["src/**/*.ts"],
    plugins: { boundaries },
    settings: {
      "boundaries/elements": elements,
      "boundaries/include": ["src/**/*.ts"],
      "import/resolver": { typescript: { project: "tsconfig.json" } },
      // `mode: "file"` is the plugin's only way to make one file an element; its deprecation notice is noise here.
      "boundaries/legacy-warnings": false,
    },
    rules: {
      "boundaries/no-unknown-files": "error",
      "boundaries/dependencies": [
        "error",
        {
          default: "disallow",
          message: "{{from.type}} may not import {{to.type}}: the layer order is in docs/layers.md",
          policies: [
            // Packages and node: built-ins are not layers.
            { allow: { to: { module: { origin: ["external", "core"] } } } },
            ...LAYERS.flatMap((layer, index) =>
              layer.map((name) => ({
                from: { element: { type: name } },
                allow: { to: { element: { types: { anyOf: [name, ...LAYERS.slice(0, index).flat()] } } } },
              })),
            ),
          ],
        },
      ],
    },
  };
}
