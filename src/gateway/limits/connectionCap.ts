/** How many WebSocket connections one client address may hold open. */
export interface ConnectionCap {
  /** Counts a connection of the address, or refuses it at the cap; a promise where the count is kept elsewhere. */
  acquire(address: string): boolean | Promise<boolean>;
  /** The connection closed (or was never made). */
  release(address: string): void;
}

/** Connections counted per address, up to `max` each (none counted when there is no cap). */
export class ConnectionCounts {
  private readonly open = new Map<string, number>();

  constructor(private readonly max: number | undefined) {}

  acquire(address: string): boolean {
    if (this.max === undefined) return true;
    const open = this.open.get(address) ?? 0;
    if (open >= this.max) return false;
    this.open.set(address, open + 1);
    return true;
  }

  release(address: string): void {
    if (this.max === undefined) return;
    const left = (this.open.get(address) ?? 1) - 1;
    if (left > 0) this.open.set(address, left);
    else this.open.delete(address);
  }
}
