/** A restart request that could not be made; `usage` when the fault is in what was asked (exit 2), else 1. */
export class NodeRestartError extends Error {
  override name = "NodeRestartError";
  constructor(
    message: string,
    readonly usage: boolean,
  ) {
    super(message);
  }
}
