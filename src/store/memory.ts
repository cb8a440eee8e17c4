/** The memory store: remembered notes, namespaced, searched by relevance. */

/** One remembered note. */
export interface Memory {
  id: string;
  namespace: string;
  content: string;
  tags: string[];
  createdAt: number;
  /** Relevance for recall (higher is better); absent for plain listings. */
  score?: number;
}

/**
 * Long-term memory (SQLite FTS5 in the embedded default, PostgreSQL full-text search in a
 * fleet). A saved note is durable when the promise resolves and visible to every server
 * sharing the store.
 */
export interface MemoryStore {
  /** Stores a note under `namespace`. Tags are trimmed, emptied ones dropped, duplicates merged. */
  save(namespace: string, content: string, tags?: string[]): Promise<Memory>;
  /**
   * Up to `limit` memories of `namespace` that best match `query`, best first (`score` higher
   * for better matches; a word in a tag counts more than one in the content). Any text is a
   * query: search syntax in it is searched as plain words. A query with no words returns the
   * most recent memories, newest first, without score. Never a memory of another namespace.
   */
  recall(namespace: string, query: string, limit: number): Promise<Memory[]>;
}
