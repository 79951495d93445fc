/**
 * Fencing tokens (docs/api.md, "Locks and fencing"): the rule a fenced put follows, as a pure
 * function of the put's token and the key's live version, so every replica decides alike.
 *
 * A lock's fencing token is the revision that granted it (the create revision of the holder's
 * key), so a newer holder always has a larger token. A fenced put carries the writer's token
 * (PutOp.ifFence). The key remembers the highest token that wrote it (StoredValue.fence) for as
 * long as it stays live: a put, increment or extend keeps it, a delete or expiry ends it.
 *
 * Invariant (enforced by `fenceAfterPut`): while a key stays live its fence never decreases, and
 * a fenced put with a token below it changes nothing (FENCED). So once a holder with token T has
 * written the key, no holder with a token below T can write it again.
 */
import { AtollError } from '../errors.js';
import type { KeyVersion } from './commands.js';

/**
 * The fence the key keeps after a put with token `ifFence` (undefined: an unfenced put) over its
 * live version `live`; throws FENCED when the token is older than the key's fence.
 */
export function fenceAfterPut(key: string, ifFence: number | undefined, live: KeyVersion | undefined): number | undefined {
  const current = live?.fence;
  if (ifFence === undefined) return current;
  if (current !== undefined && ifFence < current) {
    throw new AtollError('FENCED', `fencing token ${ifFence} is older than token ${current}, which already wrote this key: a newer lock holder exists`, {
      key,
      token: ifFence,
      fence: current,
    });
  }
  return current === undefined ? ifFence : Math.max(current, ifFence);
}
