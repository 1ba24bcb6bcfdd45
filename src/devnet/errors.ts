/** Errors a devnet client can cause; the admin routes answer them as 400 or 404 with the message. */
export class DevnetInputError extends Error {
  readonly status: 400 | 404 = 400;
  constructor(message: string) {
    super(message);
    this.name = "DevnetInputError";
  }
}

/** A node or network name the devnet does not know. */
export class DevnetNotFoundError extends DevnetInputError {
  override readonly status = 404;
  constructor(message: string) {
    super(message);
    this.name = "DevnetNotFoundError";
  }
}
