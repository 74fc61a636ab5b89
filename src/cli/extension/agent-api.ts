// The part of pi's and omp's extension API the mail4agent extension uses, written structurally so
// this package imports neither program (omp maps pi's imports onto its own; we need none of them).
// pi: dist/core/extensions/types.d.ts; omp: dist/types/extensibility/extensions/types.d.ts.

export interface AgentContext {
  cwd: string;
  sessionManager: { getSessionId(): string; getSessionFile(): string | undefined };
  /** The agent is not working on a turn. */
  isIdle(): boolean;
  /** Absent or inert in print mode; the TUI shows what `notify` says. */
  ui?: { notify(message: string, type?: 'info' | 'warning' | 'error'): void };
}

export interface ToolResult {
  content: { type: 'text'; text: string }[];
  details: unknown;
}

export interface AgentTool {
  name: string;
  label: string;
  description: string;
  /** A JSON Schema: pi validates plain JSON Schema as well as TypeBox; omp takes it as TypeBox. */
  parameters: Record<string, unknown>;
  /** omp only: offered to the model at once, not behind its tool discovery. */
  loadMode?: 'essential';
  execute(toolCallId: string, params: Record<string, unknown>, signal: AbortSignal | undefined): Promise<ToolResult>;
}

export interface SendUserMessageOptions {
  deliverAs?: 'steer' | 'followUp';
  /** omp only: who the message counts as from; "agent" keeps it from reading as the user. */
  attribution?: 'agent' | 'user';
}

export interface AgentApi {
  on(event: string, handler: (event: { type: string; reason?: string }, ctx: AgentContext) => unknown): void;
  registerTool(tool: AgentTool): void;
  registerCommand(name: string, options: { description: string; handler: (args: string, ctx: AgentContext) => Promise<void> }): void;
  sendUserMessage(content: string, options?: SendUserMessageOptions): void;
}
