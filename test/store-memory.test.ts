import { createMemoryStore } from '../src/store/memory/memory-store.js';
import { runLeaseConformance } from './support/lease-conformance.js';
import { runStoreConformance } from './support/store-conformance.js';

runStoreConformance('memory', async () => createMemoryStore());
runLeaseConformance('memory', async () => createMemoryStore());
