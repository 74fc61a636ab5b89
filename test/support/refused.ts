// Asserts a promise is refused with the named MailError code and details.
import assert from 'node:assert/strict';

export const refused = async (p: Promise<unknown>, code: string, detail: Record<string, unknown> = {}): Promise<void> => {
  await assert.rejects(p, (e: any) => {
    assert.equal(e.code, code, e.message);
    for (const [k, v] of Object.entries(detail)) assert.deepEqual(e.details?.[k], v, k);
    return true;
  });
};
