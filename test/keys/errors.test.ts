import { describe, expect, it } from 'vitest';
import { AtollError, atollErrorCodes, grpcStatusOfCode, isAtollError } from '../../src/errors.js';
import { defaultLimits, makeLimits } from '../../src/limits.js';

describe('AtollError', () => {
  it('maps every code onto a gRPC status', () => {
    for (const code of atollErrorCodes) expect(grpcStatusOfCode[code]).toMatch(/^[A-Z_]+$/);
    expect(grpcStatusOfCode.INVALID_KEY).toBe('INVALID_ARGUMENT');
    expect(grpcStatusOfCode.VALUE_TOO_LARGE).toBe('RESOURCE_EXHAUSTED');
    expect(grpcStatusOfCode.NOT_INTEGER).toBe('FAILED_PRECONDITION');
    expect(grpcStatusOfCode.OVERFLOW).toBe('OUT_OF_RANGE');
    expect(grpcStatusOfCode.COMPACTED).toBe('OUT_OF_RANGE');
    expect(grpcStatusOfCode.NOT_LEADER).toBe('UNAVAILABLE');
    expect(grpcStatusOfCode.NO_LEADER).toBe('UNAVAILABLE');
    expect(grpcStatusOfCode.TXN_CONFLICT).toBe('ABORTED');
    expect(grpcStatusOfCode.WRONG_PARTITION).toBe('FAILED_PRECONDITION');
  });

  it('carries a stable code, details and its gRPC status', () => {
    const error = new AtollError('NOT_LEADER', 'not the leader', { leaderHint: 'node-2' });
    expect(error).toBeInstanceOf(Error);
    expect(error.code).toBe('NOT_LEADER');
    expect(error.details).toEqual({ leaderHint: 'node-2' });
    expect(error.grpcStatus).toBe('UNAVAILABLE');
    expect(isAtollError(error, 'NOT_LEADER')).toBe(true);
    expect(isAtollError(new Error('x'))).toBe(false);
  });
});

describe('limits', () => {
  it('are coherent by default and refuse incoherent overrides', () => {
    expect(makeLimits()).toEqual(defaultLimits);
    expect(() => makeLimits({ maxValueBytes: 8 * 1024 * 1024 })).toThrow(/maxMessageBytes/);
    expect(() => makeLimits({ defaultPageSize: 5000 })).toThrow(/defaultPageSize/);
    expect(() => makeLimits({ maxKeyBytes: 100 })).toThrow(/4 KiB/);
  });
});
