/**
 * What a login on an account under the per-account slow-down may still do, from a browser without the account's device
 * cookie. The slow-down spaces out the attempts the account's guessers get; it must not keep the owner out, who is
 * indistinguishable from a guesser except by the credentials themselves:
 * - an account with a second factor: the password with a current code in the same request is checked at once (the
 *   code is the proof a guesser lacks), and anything less is refused without a check, so guessers stay slowed;
 * - an account without one: a few checks per address in the window are made at once, and a wrong password is answered
 *   exactly like a refusal (429), so the right one gets in while guessing is bounded by the addresses a guesser has.
 */
export type SlowedLoginPath = "both-factors" | "password-check" | "refuse";

export function slowedLoginPath(login: {
  /** The account exists and has a second factor on. */
  twoFactor: boolean;
  codeGiven: boolean;
  /** Checks made at once for this account from this address in the window, this one included. */
  addressChecks: number;
  maxAddressChecks: number;
}): SlowedLoginPath {
  if (login.twoFactor) return login.codeGiven ? "both-factors" : "refuse";
  return login.addressChecks <= login.maxAddressChecks ? "password-check" : "refuse";
}
