import { createInterface } from "node:readline";
import { Writable } from "node:stream";

/**
 * Reads a password from standard input, never from the command line (where ps and shell history would keep it): the
 * whole of stdin when piped, or a prompt without echo on a terminal.
 */
export async function readPassword(
  prompt: string,
  input: NodeJS.ReadStream = process.stdin,
): Promise<string> {
  if (!input.isTTY) {
    const chunks: Buffer[] = [];
    for await (const chunk of input) chunks.push(Buffer.from(chunk as Buffer));
    return Buffer.concat(chunks)
      .toString("utf8")
      .replace(/\r?\n$/, "");
  }
  process.stderr.write(prompt);
  const muted = new Writable({ write: (_chunk, _encoding, done) => done() });
  const rl = createInterface({ input, output: muted, terminal: true });
  const answer = await new Promise<string>((resolve) => rl.question("", resolve));
  rl.close();
  process.stderr.write("\n");
  return answer;
}
