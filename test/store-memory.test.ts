import { createMemoryStore } from '../src/store/memory/memory-store.js';
import { runStoreConformance } from './support/store-conformance.js';

runStoreConformance('memory', async () => createMemoryStore());
