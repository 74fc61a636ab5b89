// argon2id through @node-rs/argon2 (a prebuilt native module), injected into the engine's WebAuth.
// Parameters: the library's defaults, which are OWASP's argon2id minimum (19 MiB, 2 passes, 1 lane).
import { hash, verify, type Algorithm } from '@node-rs/argon2';
import type { PasswordHasher } from '../../engine/web-auth.js';

// Algorithm is a const enum in the typings (empty at run time); 2 is Argon2id.
const ARGON2ID = 2 as Algorithm;

export const argon2Hasher: PasswordHasher = {
  hash: (password) => hash(password, { algorithm: ARGON2ID }),
  async verify(digest, password) {
    if (!digest.startsWith('$argon2id$')) return false;
    try {
      return await verify(digest, password);
    } catch {
      return false;
    }
  },
};
