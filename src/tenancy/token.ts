/**
 * The bearer tokens a cluster accepts (src/node/service/auth.ts checks and stores them): "atk_" and 32
 * random bytes in base64url. The CLI prints one to start a cluster with (`atoll auth
 * new-admin-token`); a node makes one for each token it creates.
 */
import { randomBytes } from 'node:crypto';

const tokenPrefix = 'atk_';

export function newToken(): string {
  return tokenPrefix + randomBytes(32).toString('base64url');
}
