// Run in the scratch app (tests/npm/test_agent_restart.py): the installed package's AgentClient watches a frame of
// the real service, which the test stops and starts again on the same port and state. Each line the test writes
// is a step of that: `stopped`, then `started <µs>`. Prints `ready` once watching, then what happened as JSON
// lines; the pictures go to files.
import { createInterface } from 'node:readline';
import { writeFileSync } from 'node:fs';
import { AgentClient, sandboxKey } from 'framestream/node';

const cfg = JSON.parse(process.argv[2]);
const BUTTON = [140, 100];
const agent = await AgentClient.connect(cfg.base, { key: sandboxKey(cfg.secret, cfg.sandbox), subject: 'node-agent',
  backoff: { baseMs: 50, maxMs: 500 } });
const events = [];
agent.on('close', (d) => events.push({ close: d.code, again: d.reconnectInMs !== null }));
agent.on('open', (d) => events.push({ open: d.connects }));
await agent.watch(cfg.frame);
await agent.pictureAfter(cfg.frame, 0);
const input = createInterface({ input: process.stdin });
const lines = input[Symbol.asyncIterator]();
console.log('ready');

await lines.next(); // the service stopped: a step now fails as the connection is lost, and says so
let lostWith = null;
try {
  await agent.click(cfg.frame, ...BUTTON);
} catch (err) {
  lostWith = err.constructor.name;
}
console.log(JSON.stringify({ lostWith, connected: agent.connected }));

const startedUs = Number(String((await lines.next()).value).split(' ')[1]);
await agent.waitConnected({ timeoutS: 60 });
// The same frame watched again by itself: a picture of the reopened page, then a step that changes it.
const first = await agent.pictureAfter(cfg.frame, startedUs, { timeoutS: 60 });
writeFileSync(`${cfg.dir}/first.png`, first.png);
const step = await agent.click(cfg.frame, ...BUTTON);
await agent.pictureAfter(cfg.frame, step.sentUs);
writeFileSync(`${cfg.dir}/clicked.png`, (await agent.settle(cfg.frame)).png);
console.log(JSON.stringify({ connects: agent.connects, events, firstUs: first.captureUs, startedUs }));
await agent.close();
input.close(); // nothing else holds the process: it ends
