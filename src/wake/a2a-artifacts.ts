// The artifacts a follower round collects from a remote task's stream, within A2A_LIMITS: a remote
// that appends parts forever must not grow the daemon's heap. Only what the mirror can use is
// kept (text, data, and a stub per file part, which is only counted); names, descriptions and
// metadata are dropped. Past a cap a part is dropped and counted, and the result says so.
import type { Artifact, Part } from '@a2a-js/sdk';
import { A2A_LIMITS, OVER_LIMIT } from './a2a-limits.js';

interface Kept {
  artifact: Artifact;
  /** Its parts' bytes (its id is counted apart). */
  bytes: number;
}

/** What a part costs to keep, and the part as kept. */
function keptPart(p: Part): { part: Part; bytes: number } | null {
  const c = p.content;
  const bare = { metadata: undefined, filename: '', mediaType: '' };
  if (c?.$case === 'text') return { part: { ...bare, content: c }, bytes: Buffer.byteLength(c.value) };
  if (c?.$case === 'data') return { part: { ...bare, content: c }, bytes: Buffer.byteLength(JSON.stringify(c.value) ?? '') };
  if (c?.$case === 'raw') return { part: { ...bare, content: { $case: 'raw', value: Buffer.alloc(0) } }, bytes: 16 };
  if (c?.$case === 'url') return { part: { ...bare, content: { $case: 'url', value: '' } }, bytes: 16 };
  return null;
}

export class ArtifactCollector {
  private byId = new Map<string, Kept>();
  private bytes = 0;
  private parts = 0;
  private dropped = 0;

  /** An artifact as a stream delivers it: by id, `append` adding its parts to the one seen. */
  add(a: Artifact | undefined, append: boolean): void {
    if (!a) return;
    let kept = this.byId.get(a.artifactId);
    if (kept && !append) {
      // Replaced: what it held no longer counts.
      this.bytes -= kept.bytes;
      this.parts -= kept.artifact.parts.length;
      kept.artifact.parts = [];
      kept.bytes = 0;
    }
    if (!kept) {
      const idBytes = Buffer.byteLength(a.artifactId);
      if (this.byId.size >= A2A_LIMITS.keptArtifacts || this.bytes + idBytes > A2A_LIMITS.keptBytes) {
        this.dropped += Math.max(a.parts.length, 1);
        return;
      }
      kept = { artifact: { artifactId: a.artifactId, name: '', description: '', parts: [], metadata: undefined, extensions: [] }, bytes: 0 };
      this.bytes += idBytes;
      this.byId.set(a.artifactId, kept);
    }
    for (const p of a.parts) this.keep(kept, p);
  }

  private keep(into: Kept, p: Part): void {
    const k = keptPart(p);
    if (!k) return;
    if (this.parts >= A2A_LIMITS.keptParts || this.bytes + k.bytes > A2A_LIMITS.keptBytes) {
      this.dropped++;
      return;
    }
    into.artifact.parts.push(k.part);
    into.bytes += k.bytes;
    this.bytes += k.bytes;
    this.parts++;
  }

  get artifacts(): Artifact[] {
    return [...this.byId.values()].map((k) => k.artifact);
  }

  /** One note for everything dropped, or undefined. */
  get note(): string | undefined {
    if (!this.dropped) return undefined;
    return `(${this.dropped} artifact part${this.dropped > 1 ? 's' : ''} ${OVER_LIMIT})`;
  }
}
