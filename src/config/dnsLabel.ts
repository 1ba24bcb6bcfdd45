import { z } from "zod";

/** A DNS label: network names become parts of Kubernetes names, hosts and metric labels. */
export const dnsLabel = z
  .string()
  .regex(/^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/, "must be a DNS label: lower-case letters, digits and '-'");
