import type { AuditEvent } from "../store/schema.js";
import { iso, type KeysContext } from "./context.js";

/** Reading the audit trail (every part writes to it through the context), and entries from outside the service. */
export class AuditTrail {
  constructor(private readonly ctx: KeysContext) {}

  /** Newest first; `email` narrows it to one account. */
  async listAudit(options: { email?: string; limit?: number } = {}) {
    let query = this.ctx.db
      .selectFrom("audit")
      .select(["at", "email", "event", "detail"])
      .orderBy("at", "desc")
      .orderBy("id", "desc")
      .limit(options.limit ?? 100);
    if (options.email) query = query.where("email", "=", options.email.trim().toLowerCase());
    const rows = await query.execute();
    return rows.map((r) => ({ at: iso(Number(r.at))!, email: r.email, event: r.event, detail: r.detail }));
  }

  /** The account's own trail, for the page. */
  async accountAudit(userId: number, limit = 50) {
    const email = await this.ctx.emailOf(userId);
    return email ? this.listAudit({ email, limit }) : [];
  }

  /** Records something that happened outside the service's own calls (a refused cross-site request). */
  async record(event: AuditEvent, detail: string, email: string | null = null): Promise<void> {
    await this.ctx.audit(email, event, detail);
  }
}
