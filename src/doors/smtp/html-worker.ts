// The HTML-to-text worker thread: html-to-text costs about 7 µs a byte and more on deep nesting,
// so a hostile HTML-only mail would hold the daemon's event loop for seconds. Here it holds only
// this thread, which the door ends at its time budget (html-text.ts).
import { parentPort, workerData } from 'node:worker_threads';
import { htmlText } from './html-convert.js';

parentPort?.postMessage(htmlText(workerData as string));
