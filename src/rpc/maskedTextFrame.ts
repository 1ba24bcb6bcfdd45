/**
 * One final, masked WebSocket text frame (RFC 6455 section 5.2) around `text`, as Latin-1 text to write to the
 * connection in one piece: undefined when `text` is not ASCII (then its bytes are not its characters).
 *
 * The mask key is zero (see the calls WebSocket's zeroMask): the payload is the text itself. Sent through `ws`, each
 * call built an options object and wrote its frame as two chunks, a header and the text; written whole here it is one
 * chunk, and `ws`'s object literal (keyed by a symbol) is not built at all: V8 drops such a literal's maps when an idle
 * process collects its garbage, and every field of it then went through the runtime, about 9k instructions a call.
 */
export function maskedTextFrame(text: string): string | undefined {
  const length = text.length;
  // Bytes above 0x7f would be more than one byte each in UTF-8.
  if (Buffer.byteLength(text, "utf8") !== length) return undefined;
  if (length < 126) return SHORT_HEADERS[length]! + text;
  if (length < 65_536) return `\x81\xfe${String.fromCharCode(length >>> 8, length & 0xff)}${ZERO_KEY}${text}`;
  // A 64-bit length; a string is never 2^32 characters long, so its upper half is zero.
  const long = String.fromCharCode(
    0,
    0,
    0,
    0,
    (length >>> 24) & 0xff,
    (length >>> 16) & 0xff,
    (length >>> 8) & 0xff,
    length & 0xff,
  );
  return `\x81\xff${long}${ZERO_KEY}${text}`;
}

/** The mask key: four zero bytes. */
const ZERO_KEY = "\0\0\0\0";

/** FIN and opcode 1 (text), the mask bit with a length under 126, the key: the header of every short frame. */
const SHORT_HEADERS = Array.from(
  { length: 126 },
  (_, length) => `\x81${String.fromCharCode(0x80 | length)}${ZERO_KEY}`,
);
