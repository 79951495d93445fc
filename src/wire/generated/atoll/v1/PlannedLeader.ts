// Original file: proto/atoll/v1/cluster.proto


export interface PlannedLeader {
  'partition'?: (number);
  'node'?: (number);
}

export interface PlannedLeader__Output {
  'partition': (number);
  'node': (number);
}
