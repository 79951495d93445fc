// Original file: proto/atoll/v1/cluster.proto


/**
 * Changes the cluster's member table (admin only when authentication is on). The steps of
 * `atoll cluster add-node` and `remove-node`: "add" records node `id` as joining at `address`
 * (its client port; `peer_address` defaults to its port + 100), "activate" makes a joining or
 * leaving node active, "leave" marks an active node leaving (its replicas are moved off next), and
 * "remove" marks a node removed for good (its id is never reused; its peer calls are refused).
 * Refused with MEMBERSHIP_REFUSED (details.reason) and nothing changed.
 */
export interface ChangeMemberRequest {
  'action'?: (string);
  'id'?: (number);
  'address'?: (string);
  'peerAddress'?: (string);
  'zone'?: (string);
}

/**
 * Changes the cluster's member table (admin only when authentication is on). The steps of
 * `atoll cluster add-node` and `remove-node`: "add" records node `id` as joining at `address`
 * (its client port; `peer_address` defaults to its port + 100), "activate" makes a joining or
 * leaving node active, "leave" marks an active node leaving (its replicas are moved off next), and
 * "remove" marks a node removed for good (its id is never reused; its peer calls are refused).
 * Refused with MEMBERSHIP_REFUSED (details.reason) and nothing changed.
 */
export interface ChangeMemberRequest__Output {
  'action': (string);
  'id': (number);
  'address': (string);
  'peerAddress': (string);
  'zone': (string);
}
