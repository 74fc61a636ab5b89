// The agent's own hooks (Claude Code Stop/UserPromptSubmit/PostToolUse, Codex Stop, Gemini
// AfterAgent, Cursor stop). They pull, so this step cannot push anything: it succeeds when the
// session is running and its hooks have talked to this daemon, because then the mail surfaces at
// the end of the current turn (at once in listen mode). Otherwise the chain goes on.
import type { WakeAdapter, WakeRequest, WakeResult } from './types.js';

export function createHooksAdapter(hookState: (account: string, lineage: string) => { hooked: boolean }): WakeAdapter {
  return {
    kind: 'hooks',
    async wake(req: WakeRequest): Promise<WakeResult> {
      const s = req.session;
      if (!s) return { ok: false, detail: 'the account has no session' };
      if (!s.live) return { ok: false, detail: `session ${s.id} is not running` };
      if (!hookState(req.account, s.lineage).hooked) return { ok: false, detail: `no hook of session ${s.id} has called this daemon` };
      return {
        ok: true,
        detail: s.listening ? `session ${s.id} listens: its Stop hook surfaces the mail` : `session ${s.id} runs with hooks: the mail surfaces when its turn ends`,
      };
    },
  };
}
