/** How geth, anvil and reth begin an answer: the version, then the call's id. */
const HEAD = '{"jsonrpc":"2.0","id":';
const COMMA = 44;

/**
 * The numeric id at the start of a node's answer and where it ends, read without parsing the answer (a block is
 * kilobytes of JSON); undefined for any other layout.
 */
export function leadingId(text: string): { id: number; end: number } | undefined {
  if (!text.startsWith(HEAD)) return undefined;
  let end = HEAD.length;
  let id = 0;
  for (; end < text.length && end < HEAD.length + 15; end++) {
    const digit = text.charCodeAt(end) - 48;
    if (digit < 0 || digit > 9) break;
    id = id * 10 + digit;
  }
  // The id must end where the next member begins (not "1.5", not a 16-digit number cut short).
  return end > HEAD.length && text.charCodeAt(end) === COMMA ? { id, end } : undefined;
}
