/**
 * The one typed fan-out of the code base: services that change emit through it, and each
 * subscription returns a disposable. A listener that throws never disturbs the emitter or the
 * other listeners; its error (or its promise's rejection) goes to `onError` (a service logs it,
 * or ignores it).
 */
import type { Disposable } from './disposable.js';

/** Delivers each emitted value to every listener subscribed at that moment. */
export class Emitter<T = void> {
  private readonly listeners = new Set<(value: T) => void>();

  constructor(private readonly onError: (error: unknown, value: T) => void = () => undefined) {}

  /** Delivers every later value to `listener` until the subscription is disposed. */
  on(listener: (value: T) => void): Disposable {
    // one entry per subscription, so the same function may be subscribed twice
    const entry = (value: T) => listener(value);
    this.listeners.add(entry);
    return { dispose: () => void this.listeners.delete(entry) };
  }

  emit(value: T): void {
    for (const listener of [...this.listeners]) {
      try {
        const result: unknown = listener(value);
        // a listener that returns a promise fails the same way when it rejects
        if (result instanceof Promise) result.catch((e: unknown) => this.onError(e, value));
      } catch (e) {
        this.onError(e, value);
      }
    }
  }

  /** Drops every subscription (the emitter's owner is closing). */
  clear(): void {
    this.listeners.clear();
  }

  /** Listeners subscribed now. */
  get size(): number {
    return this.listeners.size;
  }
}
