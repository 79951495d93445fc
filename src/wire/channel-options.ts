/**
 * gRPC channel options shared by servers and clients. Kept apart from src/server/grpc-server.ts so a client
 * process does not load the health and reflection services.
 */
import { limits } from '../limits.js';

/** Message size bounds: one maximal write must fit, and nothing much larger is accepted (limits.ts). */
export const grpcChannelOptions = Object.freeze({
  'grpc.max_receive_message_length': limits.maxMessageBytes,
  'grpc.max_send_message_length': limits.maxMessageBytes,
});

/**
 * Keepalive for channels to nodes (peer links and clients). A node that vanishes without closing
 * its connections (a paused process, whose kernel still acknowledges TCP; a cut network link)
 * would otherwise go unnoticed until a call timed out, and never for a link with nothing in
 * flight: a follower of a quiet partition (no heartbeats by design) would wait for a dead leader
 * forever. With a ping every 2 s that must be answered within 3 s, the channel fails within about
 * 5 s, its calls end with UNAVAILABLE, and the peer transport reports the peer unreachable, which
 * wakes the quiet groups it led so they elect a new leader. The answer to a ping needs the peer's
 * event loop, so the timeout stays well above the longest loop stall seen under load (about
 * 1.2 s); a false alarm costs a reconnect and a wake-up, never an election the leader did not
 * lose (pre-vote and the leader lease keep a live leader in place). grpc-js servers do not
 * enforce a minimum ping interval, so every node accepts these pings.
 */
export const keepaliveChannelOptions = Object.freeze({
  'grpc.keepalive_time_ms': 2_000,
  'grpc.keepalive_timeout_ms': 3_000,
  'grpc.keepalive_permit_without_calls': 1,
});
