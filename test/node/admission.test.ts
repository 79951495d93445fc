/** The admission bounds on client work at a node (src/node/service/admission.ts). */
import { describe, expect, it } from 'vitest';
import { AtollError } from '../../src/errors.js';
import { Admission } from '../../src/node/service/admission.js';

const small = { maxPendingRequestsPerPartition: 3, maxPendingRequestsPerNode: 5, maxForwardsInFlight: 2 };

function codeOf(run: () => unknown): string | undefined {
  try {
    run();
    return undefined;
  } catch (error) {
    return error instanceof AtollError ? `${error.code}/${error.grpcStatus}` : String(error);
  }
}

describe('Admission', () => {
  it('refuses a partition past its bound with OVERLOADED, and admits again after a release', () => {
    const admission = new Admission(small);
    const releases = [admission.admitRequest(1), admission.admitRequest(1), admission.admitRequest(1)];
    expect(codeOf(() => admission.admitRequest(1))).toBe('OVERLOADED/RESOURCE_EXHAUSTED');
    // Another partition still has room.
    const other = admission.admitRequest(2);
    releases[0]!();
    releases[0]!(); // a second release of the same request changes nothing
    expect(admission.pending).toBe(3);
    releases.push(admission.admitRequest(1));
    expect(codeOf(() => admission.admitRequest(1))).toBe('OVERLOADED/RESOURCE_EXHAUSTED');
    other();
    for (const release of releases) release();
    expect(admission.pending).toBe(0);
  });

  it('bounds the node as a whole across partitions', () => {
    const admission = new Admission(small);
    for (let partition = 0; partition < 5; partition++) admission.admitRequest(partition);
    expect(codeOf(() => admission.admitRequest(9))).toBe('OVERLOADED/RESOURCE_EXHAUSTED');
    expect(admission.pending).toBe(5);
  });

  it('bounds forwards in flight', () => {
    const admission = new Admission(small);
    const first = admission.admitForward();
    admission.admitForward();
    expect(codeOf(() => admission.admitForward())).toBe('OVERLOADED/RESOURCE_EXHAUSTED');
    first();
    expect(admission.forwards).toBe(1);
    admission.admitForward();
    expect(admission.forwards).toBe(2);
  });
});
