// Run in the scratch app (tests/npm/test_agent_silent_path.py): the installed package's AgentClient watches a frame
// of the real service through a path the test then cuts without a close (tests/silent_path.py). A click made after
// the cut waits for an answer that cannot come; the client's liveness check must fail it with ConnectionLost.
// Prints `ready` once watching, reads one line (the cut), then prints what happened as JSON.
import { createInterface } from 'node:readline';
import { AgentClient, ConnectionLost } from 'framestream/node';

const cfg = JSON.parse(process.argv[2]);
const agent = await AgentClient.connect(cfg.base, { token: cfg.token, grants: cfg.grant,
  liveness: { idleMs: 1000, answerMs: 3000 } });
const closes = [];
agent.on('close', (d) => closes.push(d));
await agent.watch(cfg.frame);
console.log('ready');
const lines = createInterface({ input: process.stdin });
await new Promise((resolve) => lines.once('line', resolve));
const started = performance.now();
let outcome;
try {
  await agent.click(cfg.frame, 10, 10);
  outcome = { answered: true };
} catch (err) {
  outcome = { error: err.constructor.name, lost: err instanceof ConnectionLost, message: err.message };
}
outcome.ms = Math.round(performance.now() - started);
outcome.closes = closes;
outcome.connected = agent.connected;
console.log(JSON.stringify(outcome));
lines.close();
process.exit(0); // the dead socket's close handshake never ends: nothing more to wait for
