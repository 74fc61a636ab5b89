export * from './errors.js';
export * from './limits.js';
export * from './address.js';
export * from './ops.js';
export * from './admin.js';
export * from './wait-for.js';
export * from './email-attachment.js';
export { parseInput } from './validate.js';
export { selectorProblem, utf8Bytes } from './text.js';
