"""WebRTC as a second transport for a frame's own H.264 pictures (aiortc): nothing is encoded twice.

- `ice`: ICE settings (`FRAMESTREAM_ICE_HOSTS`, `FRAMESTREAM_ICE_SERVERS`), no aiortc import;
- `sdp`: what is negotiated made to match what is sent (H.264 profile and level in the answer's fmtp);
- `track`: a video track whose `recv()` hands aiortc the frame's access units as `av.Packet`s;
- `peer`: one peer connection for one watched frame (answer, candidates, keyframe requests, watchdog);
- `registry`: every peer connection of the service, its cap and its counters for /metrics.

aiortc is imported only once a viewer asks for WebRTC: an idle service loads none of it.
"""
