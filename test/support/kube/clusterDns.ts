import { createSocket, type RemoteInfo } from "node:dgram";

/**
 * The stand-in for cluster DNS (CoreDNS is not built) for pods in real containers: a UDP DNS server on ADDRESS:53
 * (the kubelet's `clusterDNS`, written into every pod's resolv.conf with the cluster's search domains) that answers
 * A queries for `<service>.<namespace>.svc.cluster.local` with the name's address from RESOLVE, read at query time.
 * Other names of the cluster domain get NXDOMAIN (the resolver then tries its next search domain); AAAA and other
 * types of a known name get an empty answer, as CoreDNS gives a Service without IPv6. Nothing is forwarded off the
 * machine: names outside the cluster domain are refused.
 */
export interface ClusterDns {
  /** The UDP port it listens on. */
  port: number;
  /** Every name answered with an address so far, lower case, without the trailing dot. */
  answered(): string[];
  stop(): Promise<void>;
}

const TYPE_A = 1;
const CLASS_IN = 1;
const RCODE_NXDOMAIN = 3;
const RCODE_REFUSED = 5;

export async function startClusterDns(options: {
  address: string;
  /** Default 53 (where resolv.conf sends queries); 0 for an ephemeral port. */
  port?: number;
  domain: string;
  /** The IPv4 address of NAME (a fully qualified name of the cluster domain), or undefined. */
  resolve(name: string): Promise<string | undefined>;
}): Promise<ClusterDns> {
  const socket = createSocket("udp4");
  const answered: string[] = [];
  const suffix = `.${options.domain}`;
  socket.on("message", (message: Buffer, peer: RemoteInfo) => {
    const query = parseQuery(message);
    if (!query) return; // not a query we can read: dropped, the resolver retries or gives up
    const name = query.name.toLowerCase();
    const respond = (rcode: number, address?: string) =>
      socket.send(answer(message, query.end, rcode, address), peer.port, peer.address);
    if (!name.endsWith(suffix)) {
      respond(RCODE_REFUSED);
      return;
    }
    options.resolve(name).then(
      (address) => {
        if (address === undefined) return respond(RCODE_NXDOMAIN);
        if (query.type !== TYPE_A || query.class !== CLASS_IN) return respond(0);
        answered.push(name);
        respond(0, address);
      },
      () => respond(2), // SERVFAIL: the API could not be read
    );
  });
  await new Promise<void>((resolve, reject) => {
    socket.once("error", reject);
    socket.bind(options.port ?? 53, options.address, () => resolve());
  });
  return {
    port: socket.address().port,
    answered: () => [...answered],
    stop: () => new Promise<void>((resolve) => socket.close(() => resolve())),
  };
}

/** The one question of a standard query: its name (dotted), type, class and where it ends; undefined if malformed. */
function parseQuery(message: Buffer): { name: string; type: number; class: number; end: number } | undefined {
  if (message.length < 12) return undefined;
  const flags = message.readUInt16BE(2);
  if (flags & 0x8000 || message.readUInt16BE(4) !== 1) return undefined; // a response, or not one question
  const labels: string[] = [];
  let offset = 12;
  for (;;) {
    const length = message[offset];
    if (length === undefined || length > 63) return undefined; // truncated, or a compression pointer
    offset += 1;
    if (length === 0) break;
    if (offset + length > message.length) return undefined;
    labels.push(message.toString("latin1", offset, offset + length));
    offset += length;
  }
  if (offset + 4 > message.length) return undefined;
  return {
    name: labels.join("."),
    type: message.readUInt16BE(offset),
    class: message.readUInt16BE(offset + 2),
    end: offset + 4,
  };
}

/** The response to QUERY: its id and question, RCODE, and one A record of ADDRESS (TTL 5 s) when given. */
function answer(query: Buffer, questionEnd: number, rcode: number, address?: string): Buffer {
  const header = Buffer.alloc(12);
  query.copy(header, 0, 0, 2); // id
  const recursionDesired = query.readUInt16BE(2) & 0x0100;
  header.writeUInt16BE(0x8000 | 0x0400 | recursionDesired | 0x0080 | rcode, 2); // QR, AA, RD as asked, RA
  header.writeUInt16BE(1, 4);
  header.writeUInt16BE(address ? 1 : 0, 6);
  const question = query.subarray(12, questionEnd);
  if (!address) return Buffer.concat([header, question]);
  const record = Buffer.alloc(16);
  record.writeUInt16BE(0xc00c, 0); // the name: a pointer to the question's
  record.writeUInt16BE(TYPE_A, 2);
  record.writeUInt16BE(CLASS_IN, 4);
  record.writeUInt32BE(5, 6);
  record.writeUInt16BE(4, 10);
  address.split(".").forEach((octet, i) => record.writeUInt8(Number(octet), 12 + i));
  return Buffer.concat([header, question, record]);
}
