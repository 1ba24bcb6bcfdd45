/** Values for a member's command placeholders; a value may be computed only when the template uses it. */
export type PlaceholderValues = Record<string, string | (() => string)>;

export class CommandTemplateError extends Error {
  override name = "CommandTemplateError";
}

/** Fills `{name}` placeholders in every argument. A placeholder without a value is an error naming it. */
export function fillCommand(template: ReadonlyArray<string>, values: PlaceholderValues): string[] {
  return template.map((arg) =>
    arg.replace(/\{([A-Za-z]+)\}/g, (_, name: string) => {
      const value = values[name];
      if (value === undefined) {
        throw new CommandTemplateError(
          `placeholder {${name}} has no value here` +
            (name === "genesisTimestamp" ? " (it needs a devnet: section in the config)" : ""),
        );
      }
      return typeof value === "function" ? value() : value;
    }),
  );
}
