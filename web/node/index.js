// framestream/node: for the app's server (Node 20+). Tokens minted with the service's own recipe, and an agent
// client with the Python client's verbs. No dependencies: node:crypto, and Node's WebSocket and fetch (or a
// `ws`-compatible constructor passed in).
//
//   import { sandboxKey, mintToken, AgentClient } from 'framestream/node';
//   const key = sandboxKey(process.env.TERMINAL_AUTH_SECRET, process.env.SANDBOX_ID);
//   const viewerToken = mintToken(key, { role: 'view', frame: 'f1', sub: 'alice' });
//   const agent = await AgentClient.connect('http://127.0.0.1:7682', { key });
//   const step = await agent.click('f1', 100, 60);
//   const { png } = await agent.pictureAfter('f1', step.sentUs);

export {
  sandboxKey, mintToken, verifyToken, SandboxKey, TokenError, ROLES, MAX_TTL, STEP_MAX_TTL,
} from './tokens.js';
export { AgentClient, nowUs, pngSize } from './agent.js';
export {
  ClientError, ConnectionLost, ServiceError, Superseded, TakenOver, Forbidden, Unauthorized, Expired, RateLimited,
  UnknownFrame, Replayed, BadInput, BadMessage, Capacity, SharedFramesOff, UnknownPage, UnknownDialog, DialogOpen,
  Unresponsive, Printing, NavigationFailed, errorFor,
} from './errors.js';
export * as steps from './steps.js';
