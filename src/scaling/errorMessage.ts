/** One line on why a request to a rate source failed, with the cause fetch hides behind "fetch failed". */
export function errorMessage(error: unknown): string {
  if (error instanceof Error && error.name === "TimeoutError") return "timed out";
  if (error instanceof Error && error.cause instanceof Error)
    return `${error.message} (${error.cause.message})`;
  return error instanceof Error ? error.message : String(error);
}
