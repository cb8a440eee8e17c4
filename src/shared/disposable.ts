/** Something that holds a resource or a subscription until disposed (idempotent). */
export interface Disposable {
  dispose(): void;
}
