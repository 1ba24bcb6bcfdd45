/** Canonical block hashes of the most recent heights, bounded in size. */
export class RecentHashes {
  private readonly byHeight = new Map<number, string>();
  private highest = -1;
  private changes = 0;

  constructor(private readonly depth: number) {}

  set(height: number, hash: string): void {
    if (this.byHeight.get(height) === hash) return;
    this.changes++;
    this.byHeight.set(height, hash);
    if (height > this.highest) {
      this.highest = height;
      for (const h of this.byHeight.keys()) if (h <= height - this.depth) this.byHeight.delete(h);
    }
  }

  has(height: number): boolean {
    return this.byHeight.has(height);
  }

  get(height: number): string | undefined {
    return this.byHeight.get(height);
  }

  /** After a reorg to `height`, what was above it is no longer canonical. */
  truncateAbove(height: number): void {
    this.changes++;
    for (const h of this.byHeight.keys()) if (h > height) this.byHeight.delete(h);
    this.highest = height;
  }

  /** A number that grows at every change of the hashes (a height set to another hash, a reorg's truncation). */
  get revision(): number {
    return this.changes;
  }

  /** A read-only view for the engine. */
  view(): ReadonlyMap<number, string> {
    return this.byHeight;
  }
}
