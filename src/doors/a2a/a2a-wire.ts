// The A2A 1.0 wire, JSON-RPC binding: what this door reads (zod, camelCase ProtoJSON as the
// specification's a2a.proto serialises it) and the shapes it writes. Only the parts the door uses.
import { z } from 'zod';
import type { TaskState } from '../../wire/tasks.js';

export const A2A_PROTOCOL_VERSION = '1.0';
export const A2A_VERSION_HEADER = 'a2a-version';

/** Our states are A2A's; ProtoJSON writes them as enum names. */
export const A2A_STATE: Record<TaskState, string> = {
  submitted: 'TASK_STATE_SUBMITTED',
  working: 'TASK_STATE_WORKING',
  input_required: 'TASK_STATE_INPUT_REQUIRED',
  auth_required: 'TASK_STATE_AUTH_REQUIRED',
  completed: 'TASK_STATE_COMPLETED',
  failed: 'TASK_STATE_FAILED',
  canceled: 'TASK_STATE_CANCELED',
  rejected: 'TASK_STATE_REJECTED',
};
export const STATE_OF_A2A = new Map(Object.entries(A2A_STATE).map(([ours, theirs]) => [theirs, ours as TaskState]));

/** What a message's parts and the answers' parts may be. */
export const INPUT_MODES = ['text/plain', 'application/json'] as const;

const Struct = z.record(z.string(), z.unknown());

export const PartIn = z.object({
  text: z.string().optional(),
  raw: z.string().optional(),
  url: z.string().optional(),
  data: z.unknown().optional(),
  metadata: Struct.optional(),
  filename: z.string().optional(),
  mediaType: z.string().optional(),
});

export const MessageIn = z.object({
  messageId: z.string().min(1).max(256),
  contextId: z.string().max(256).optional(),
  taskId: z.string().max(256).optional(),
  role: z.enum(['ROLE_USER', 'ROLE_AGENT', 'ROLE_UNSPECIFIED']).optional(),
  parts: z.array(PartIn).min(1, 'at least one part is required').max(64),
  metadata: Struct.optional(),
  extensions: z.array(z.string()).optional(),
  referenceTaskIds: z.array(z.string()).max(8).optional(),
});

export const SendMessageParams = z.object({
  tenant: z.string().optional(),
  message: MessageIn,
  configuration: z
    .object({
      acceptedOutputModes: z.array(z.string()).optional(),
      taskPushNotificationConfig: z.unknown().optional(),
      historyLength: z.number().int().min(0).optional(),
      returnImmediately: z.boolean().optional(),
    })
    .optional(),
  metadata: Struct.optional(),
});

export const TaskIdParams = z.object({
  tenant: z.string().optional(),
  id: z.string().min(1).max(256),
  historyLength: z.number().int().min(0).optional(),
  metadata: Struct.optional(),
});

export const ListTasksParams = z.object({
  tenant: z.string().optional(),
  contextId: z.string().max(256).optional(),
  status: z.string().optional(),
  pageSize: z.number().int().min(1).max(100).optional(),
  pageToken: z.string().max(64).optional(),
  historyLength: z.number().int().min(0).optional(),
  statusTimestampAfter: z.iso.datetime({ offset: true }).optional(),
  includeArtifacts: z.boolean().optional(),
});

export type PartIn = z.output<typeof PartIn>;
export type MessageIn = z.output<typeof MessageIn>;
export type SendMessageParams = z.output<typeof SendMessageParams>;
export type TaskIdParams = z.output<typeof TaskIdParams>;
export type ListTasksParams = z.output<typeof ListTasksParams>;

// ---- what the door writes

export type Part = { text: string; mediaType?: string } | { data: unknown; mediaType?: string };

export interface Message {
  messageId: string;
  contextId?: string;
  taskId?: string;
  role: 'ROLE_USER' | 'ROLE_AGENT';
  parts: Part[];
  metadata?: Record<string, unknown>;
}

export interface TaskStatus {
  state: string;
  message?: Message;
  timestamp?: string;
}

export interface Artifact {
  artifactId: string;
  name?: string;
  description?: string;
  parts: Part[];
  metadata?: Record<string, unknown>;
}

export interface Task {
  id: string;
  contextId: string;
  status: TaskStatus;
  artifacts?: Artifact[];
  history?: Message[];
  metadata?: Record<string, unknown>;
}

/** One event of a stream (StreamResponse): exactly one of its fields. */
export type StreamEvent =
  | { task: Task }
  | { message: Message }
  | { statusUpdate: { taskId: string; contextId: string; status: TaskStatus; metadata?: Record<string, unknown> } }
  | { artifactUpdate: { taskId: string; contextId: string; artifact: Artifact; lastChunk?: boolean } };

export type RpcId = string | number | null;
