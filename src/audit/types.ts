/** The audit log's rows and stores (declared by the store layer, which every implementation follows). */
export type {
  AuditQuery,
  AuditStore,
  InvocationEnd,
  InvocationRecord,
  InvocationStart,
  InvocationState,
  StoredInvocation,
  Via,
} from '../store/audit.js';
export type { Memory, MemoryStore } from '../store/memory.js';
