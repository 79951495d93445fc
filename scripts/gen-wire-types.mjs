#!/usr/bin/env node
/**
 * Generates the TypeScript types of the atoll.v1 messages and services from proto/atoll/v1/*.proto
 * with proto-loader-gen-types (shipped with @grpc/proto-loader), so they cannot drift from the API.
 * The output is committed in src/wire/generated/; src/wire/wire-types.ts names the types the
 * code uses. The options match protos.ts's loader options (lowerCamelCase fields, 64-bit integers
 * as strings, enums as names, defaults, virtual oneof fields).
 *
 * Usage: node scripts/gen-wire-types.mjs [outDir]     (`npm run gen:wire-types`)
 *   Without outDir it replaces src/wire/generated/. test/scripts/generated-wire-types.test.ts
 *   generates into a temporary directory and fails when the committed files differ (stale).
 */
import { execFileSync } from 'node:child_process';
import { existsSync, rmSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');

/** The .proto files, relative to proto/ (the same list as src/wire/protos.ts protoFileNames). */
export const protoFiles = ['atoll/v1/kv.proto', 'atoll/v1/cluster.proto', 'atoll/v1/auth.proto'];

export const committedDir = join(root, 'src', 'wire', 'generated');

/** Writes the generated files into `outDir`, which it empties first. */
export function generateWireTypes(outDir) {
  const generator = join(root, 'node_modules', '.bin', 'proto-loader-gen-types');
  if (!existsSync(generator)) throw new Error(`cannot find ${generator}: is @grpc/proto-loader installed?`);
  rmSync(outDir, { recursive: true, force: true });
  execFileSync(
    generator,
    [
      '--longs=String',
      '--enums=String',
      '--defaults',
      '--oneofs',
      '--includeComments',
      '--grpcLib=@grpc/grpc-js',
      '--importFileExtension=.js',
      '-I',
      'proto',
      '-O',
      outDir,
      ...protoFiles,
    ],
    { cwd: root, stdio: ['ignore', 'ignore', 'inherit'], timeout: 60_000 },
  );
}

if (process.argv[1] !== undefined && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const outDir = process.argv[2] === undefined ? committedDir : resolve(process.argv[2]);
  generateWireTypes(outDir);
  console.log(`gen-wire-types: wrote ${outDir}`);
}
