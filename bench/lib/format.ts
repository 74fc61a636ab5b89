import type { Summary } from './stats.js';

export const ms = (x: number): string => (Number.isFinite(x) ? `${x < 10 ? x.toFixed(2) : x.toFixed(1)} ms` : 'n/a');
export const pct = (s: Summary): string => `p50 ${ms(s.p50)} · p99 ${ms(s.p99)}`;
export const num = (x: number): string => Math.round(x).toLocaleString('en-US');
export const ratio = (a: number, b: number): string => (b > 0 && Number.isFinite(a) ? `${(a / b).toFixed(2)}×` : 'n/a');
/** Flat: the large case's figure is within 25 % (or 0.2 ms) of the small case's. */
export const flat = (small: number, large: number): boolean => large <= Math.max(small * 1.25, small + 0.2);
