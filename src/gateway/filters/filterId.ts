import { randomFillSync } from "node:crypto";

/** Random bytes in an id: as unguessable as geth's 16-byte filter ids. */
const RANDOM_BYTES = 16;
/** Hex digits of an id this gateway makes: the random bytes, then 4 naming the owner. */
const ID_DIGITS = (RANDOM_BYTES + 4) * 2;
const OWN_ID = new RegExp(`^0x[0-9a-f]{${ID_DIGITS}}$`, "i");

/**
 * A new filter id naming its owner, the gateway worker that holds the filter (0 without workers), so any worker can
 * tell where a poll must go without asking anyone. 16 random bytes, then the owner as 4 bytes XORed with the first 4
 * random ones: ids look uniformly random, so clients take them as opaque (as they must) and do not come to rely on a
 * layout. The first digit is never 0, so the id is a valid hex quantity, as geth's are.
 */
export function newFilterId(owner: number, random?: Buffer): string {
  const bytes = Buffer.allocUnsafe(RANDOM_BYTES + 4);
  if (random) random.copy(bytes, 0, 0, RANDOM_BYTES);
  else randomFillSync(bytes, 0, RANDOM_BYTES);
  const first = bytes.readUInt8(0);
  if (first < 0x10) bytes.writeUInt8(first | 0x10, 0);
  bytes.writeUInt32BE((owner ^ bytes.readUInt32BE(0)) >>> 0, RANDOM_BYTES);
  return `0x${bytes.toString("hex")}`;
}

/** The worker that holds the filter of `id`; undefined for an id this gateway did not make. */
export function filterOwner(id: string): number | undefined {
  if (!OWN_ID.test(id)) return undefined;
  const bytes = Buffer.from(id.slice(2), "hex");
  return (bytes.readUInt32BE(RANDOM_BYTES) ^ bytes.readUInt32BE(0)) >>> 0;
}
