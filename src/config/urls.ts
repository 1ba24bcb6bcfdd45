import { z } from "zod";

function urlWithProtocols(protocols: string[], label: string) {
  return z.string().refine(
    (value) => {
      try {
        return protocols.includes(new URL(value).protocol);
      } catch {
        return false;
      }
    },
    { message: `must be ${label} URL` },
  );
}

export const httpUrl = urlWithProtocols(["http:", "https:"], "an http(s)");
export const wsUrl = urlWithProtocols(["ws:", "wss:"], "a ws(s)");
