/**
 * The client lease (src/client/lease.ts) over a fake transport and fake timers: one server lease
 * per bucket, granted lazily; keepalives every ttl/3 for all of them; the lease is lost once a
 * keepalive answers LEASE_NOT_FOUND or none is acknowledged for a whole TTL, reported once, and
 * then refuses further use.
 */
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { Lease } from '../../src/client/lease.js';
import { AtollError } from '../../src/errors.js';
import type { LeaseRequest, LeaseResponse } from '../../src/api/node-api.js';

class FakeServer {
  readonly calls: LeaseRequest[] = [];
  next = 1;
  /** What keepalives do: answer, refuse, or never answer in time. */
  keepAlive: 'ok' | 'not-found' | 'unavailable' = 'ok';

  call = async (request: LeaseRequest): Promise<LeaseResponse> => {
    this.calls.push(request);
    const response = { lease: request.lease ?? `0.${this.next++}`, ttlMs: 3_000, ttlLeftMs: 3_000, keys: [], revision: 0 };
    if (request.action === 'keepAlive' && this.keepAlive === 'not-found') throw new AtollError('LEASE_NOT_FOUND', 'gone');
    if (request.action === 'keepAlive' && this.keepAlive === 'unavailable') throw new AtollError('UNAVAILABLE', 'no leader');
    return response;
  };

  count(action: LeaseRequest['action']): number {
    return this.calls.filter((call) => call.action === action).length;
  }
}

beforeEach(() => {
  vi.useFakeTimers();
});
afterEach(() => {
  vi.useRealTimers();
});

describe('the client lease', () => {
  it('grants one server lease per bucket, lazily, and keeps them all alive every ttl/3', async () => {
    const server = new FakeServer();
    const lease = new Lease({ call: server.call }, 3_000);
    expect(server.calls).toEqual([]);
    const first = await lease.idFor('svc/a');
    expect(await lease.idFor('svc/b')).toBe(first);
    const other = await lease.idFor('db/x');
    expect(other).not.toBe(first);
    expect(server.count('grant')).toBe(2);
    await vi.advanceTimersByTimeAsync(10_000);
    // 10 rounds of two keepalives, and the lease lives.
    expect(server.count('keepAlive')).toBe(20);
    expect(lease.lost).toBeUndefined();
    await lease.revoke();
    expect(server.count('revoke')).toBe(2);
    await expect(lease.idFor('svc/c')).rejects.toMatchObject({ code: 'LEASE_NOT_FOUND' });
  });

  it('is lost, once, when a keepalive answers LEASE_NOT_FOUND; the rest is revoked', async () => {
    const server = new FakeServer();
    const lease = new Lease({ call: server.call }, 3_000);
    await lease.idFor('svc/a');
    await lease.idFor('db/x');
    const reasons: string[] = [];
    lease.onLost((error) => reasons.push(error.code));
    server.keepAlive = 'not-found';
    await vi.advanceTimersByTimeAsync(5_000);
    expect(reasons).toEqual(['LEASE_NOT_FOUND']);
    expect(server.count('revoke')).toBe(2);
    await expect(lease.idFor('svc/a')).rejects.toMatchObject({ code: 'LEASE_NOT_FOUND' });
  });

  it('is lost when no keepalive is acknowledged for a whole TTL, not before', async () => {
    const server = new FakeServer();
    const lease = new Lease({ call: server.call }, 3_000);
    await lease.idFor('svc/a');
    server.keepAlive = 'unavailable';
    await vi.advanceTimersByTimeAsync(2_500);
    expect(lease.lost).toBeUndefined();
    await vi.advanceTimersByTimeAsync(600);
    expect(lease.lost?.code).toBe('LEASE_NOT_FOUND');
  });
});
