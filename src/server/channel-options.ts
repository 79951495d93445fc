/**
 * gRPC channel options shared by servers and clients. Kept apart from grpc-server.ts so a client
 * process does not load the health and reflection services.
 */
import { limits } from '../limits.js';

/** Message size bounds: one maximal write must fit, and nothing much larger is accepted (limits.ts). */
export const grpcChannelOptions = Object.freeze({
  'grpc.max_receive_message_length': limits.maxMessageBytes,
  'grpc.max_send_message_length': limits.maxMessageBytes,
});
