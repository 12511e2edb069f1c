// framestream viewer library: one WebSocket to the service, any number of frames drawn into canvases.
//
//   import { connect } from '/web/framestream.js';
//   const client = connect({ token });            // ws(s)://<page host>/ws
//   client.watch('frame-id', document.querySelector('canvas'));
//   client.addEventListener('frame-state', (e) => console.log(e.detail));
//
// The wire protocol is docs/protocol.md (shared PROTOCOL.md); the API is docs/viewer.md.
// Plain ES modules, no build step, no dependencies: WebCodecs VideoDecoder does the H.264. This file is the
// public entry; the parts are in lib/ (client.js, transport.js, router.js, decoder.js, debug.js, ...).

import { FramestreamClient } from './lib/client.js';

export { FramestreamClient } from './lib/client.js';
export { defaultUrl } from './lib/transport.js';
export { webCodecsAvailable } from './lib/decoder.js';
export { mountFrame } from './lib/view.js';
export { attachInput } from './lib/input.js';
export { mountTabUi } from './lib/tabui.js';
export { decodeClaims, roleOf } from './lib/token.js';

/** Open a client. Options: see FramestreamClient (lib/client.js). */
export function connect(options = {}) {
  const client = new FramestreamClient(options);
  client.open();
  return client;
}
