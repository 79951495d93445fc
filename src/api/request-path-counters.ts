/**
 * What a request costs on its way through this process, counted: how often a request message is
 * decoded into an operation, re-encoded to travel on (a forward), validated, and registered with a
 * deadline wheel. Plain integer increments (no labels, no allocation), so they can stay on the hot
 * path; test/server/request-path.test.ts reads them to hold the path to one decode, one validation
 * and one deadline registration per request per node (issue 34 item 4). Per process: nodes that
 * share a process (an in-process test cluster) share the counters.
 */
export interface RequestPathCounters {
  /** Request messages decoded into an operation (a unary call, a KV.Stream request, a Peer.Forward). */
  decodes: number;
  /** Operations encoded again into a message for another node (a forward that could not travel as it arrived). */
  reencodes: number;
  /** Validations of a request's keys, request id and sizes (src/api/checked-operation.ts). */
  validations: number;
  /** Deadlines registered with a deadline wheel (src/node/service/deadline-wheel.ts). */
  deadlines: number;
}

export const requestPathCounters: RequestPathCounters = { decodes: 0, reencodes: 0, validations: 0, deadlines: 0 };

/** A copy of the counters now, to compare with a later one. */
export function requestPathSnapshot(): RequestPathCounters {
  return { ...requestPathCounters };
}
