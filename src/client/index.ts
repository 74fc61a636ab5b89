export { MailClient, type ClientOptions, type SendInput, type TaskCreateInput, type ApprovalRequestInput } from './http-client.js';
export { DaemonUnreachable, PortOwnedByOtherUser, StreamUnavailable } from './errors.js';
export { StreamTransport, type StreamOptions, type StreamHello, type MailEvent, type SubscribeOptions } from './stream-transport.js';
export { portOwner, type PortOwner } from './port-owner.js';
export { MailError, detailText, type ErrorCode } from '../wire/errors.js';
export type * from '../wire/ops.js';
export type * from '../wire/tasks.js';
