import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { decodeCommand, encodeCommand } from '../../src/mvcc/command-codec.js';
import type { Command, WriteOp } from '../../src/mvcc/commands.js';
import { validateCommand } from '../../src/mvcc/validate-command.js';

const keyArbitrary = fc.string({ minLength: 1, maxLength: 12, unit: 'grapheme' });
const bytesArbitrary = fc.uint8Array({ maxLength: 16 }).map((bytes) => Uint8Array.from(bytes));
const revisionArbitrary = fc.nat({ max: 2 ** 40 });
const ttlArbitrary = fc.integer({ min: 1, max: 10 ** 9 });

// Valid commands only (encodeCommand validates), with each optional field drawn explicitly.
const expiryArbitrary = fc.oneof(fc.constant({}), ttlArbitrary.map((ttlMs) => ({ ttlMs })), fc.constant({ keepTtl: true }));
const conditionArbitrary = fc.oneof(
  fc.constant({}),
  fc.constant({ ifAbsent: true }),
  fc.record({ ifPresent: fc.constant(true), ifModRevision: revisionArbitrary, ifValue: bytesArbitrary }, { requiredKeys: [] }),
);
const returnPreviousArbitrary = fc.oneof(fc.constant({}), fc.constant({ returnPrevious: true }));
const putArbitrary: fc.Arbitrary<WriteOp> = fc
  .tuple(keyArbitrary, bytesArbitrary, expiryArbitrary, conditionArbitrary, returnPreviousArbitrary)
  .map(([key, value, expiry, condition, returnPrevious]) => ({ type: 'put', key, value, ...expiry, ...condition, ...returnPrevious }));
const deleteArbitrary: fc.Arbitrary<WriteOp> = fc
  .tuple(keyArbitrary, fc.record({ ifModRevision: revisionArbitrary, ifValue: bytesArbitrary }, { requiredKeys: [] }), returnPreviousArbitrary)
  .map(([key, condition, returnPrevious]) => ({ type: 'delete', key, ...condition, ...returnPrevious }));
const incrementArbitrary: fc.Arbitrary<WriteOp> = fc
  .tuple(keyArbitrary, fc.bigInt({ min: -(2n ** 63n), max: 2n ** 63n - 1n }), fc.option(ttlArbitrary, { nil: undefined }))
  .map(([key, delta, ttlMs]) => ({ type: 'increment', key, delta, ...(ttlMs !== undefined && { ttlMs }) }));
const extendArbitrary: fc.Arbitrary<WriteOp> = fc.record({ type: fc.constant('extend' as const), key: keyArbitrary, ttlMs: ttlArbitrary });
const writeArbitrary = fc.oneof(putArbitrary, deleteArbitrary, incrementArbitrary, extendArbitrary);
const writesArbitrary = fc.uniqueArray(writeArbitrary, { minLength: 1, maxLength: 4, selector: (write) => write.key });
const commandArbitrary: fc.Arbitrary<Command> = fc.oneof(
  writeArbitrary,
  fc.record({ type: fc.constant('batch' as const), writes: writesArbitrary }),
  fc.record({
    type: fc.constant('txn' as const),
    snapshotRevision: revisionArbitrary,
    isolation: fc.constantFrom('snapshot' as const, 'serializable' as const),
    readKeys: fc.array(keyArbitrary, { maxLength: 3 }),
    readPrefixes: fc.array(fc.string({ maxLength: 6 }), { maxLength: 3 }),
    writes: writesArbitrary,
    note: fc.uint8Array({ maxLength: 8 }),
    snapshotTimeMs: fc.nat({ max: 2 ** 45 }),
  }, { requiredKeys: ['type', 'snapshotRevision', 'isolation', 'readKeys', 'readPrefixes', 'writes'] }),
  fc.record({ type: fc.constant('compact' as const), belowRevision: revisionArbitrary }),
  fc.record({ type: fc.constant('expire' as const), keys: fc.uniqueArray(keyArbitrary, { minLength: 1, maxLength: 4 }) }),
);

describe('command codec', () => {
  it('round-trips every command shape', () => {
    fc.assert(
      fc.property(commandArbitrary, (command) => {
        expect(decodeCommand(encodeCommand(command))).toEqual(command);
      }),
      { numRuns: 500 },
    );
  });

  it('refuses to encode an invalid command', () => {
    expect(() => encodeCommand({ type: 'put', key: '\ud800', value: new Uint8Array(0) })).toThrow(expect.objectContaining({ code: 'INVALID_KEY' }));
    expect(() => encodeCommand({ type: 'put', key: 'k', value: new Uint8Array(0), ttlMs: -1 })).toThrow(expect.objectContaining({ code: 'INVALID_ARGUMENT' }));
  });

  it('is compact: a small put is a few bytes plus its key and value', () => {
    const bytes = encodeCommand({ type: 'put', key: 'services/auth', value: new TextEncoder().encode('localhost:8081') });
    expect(bytes.length).toBe(2 + 2 + 4 + 13 + 4 + 14);
  });

  it('rejects malformed bytes with INVALID_ARGUMENT, never a crash', () => {
    const valid = encodeCommand({ type: 'batch', writes: [{ type: 'put', key: 'k', value: Uint8Array.of(1) }] });
    for (let length = 0; length < valid.length; length++) {
      expect(() => decodeCommand(valid.subarray(0, length))).toThrow(expect.objectContaining({ code: 'INVALID_ARGUMENT' }));
    }
    expect(() => decodeCommand(Uint8Array.of(...valid, 0))).toThrow(expect.objectContaining({ code: 'INVALID_ARGUMENT' }));
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 64 }), (noise) => {
        try {
          validateCommand(decodeCommand(Uint8Array.from(noise)));
        } catch (error) {
          expect(error).toMatchObject({ code: expect.any(String) });
        }
      }),
      { numRuns: 500 },
    );
  });
});
