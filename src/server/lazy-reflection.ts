/**
 * Server reflection (grpc.reflection.v1 and v1alpha, what `grpcurl list` asks), registered on a
 * server at once but built on its first call. @grpc/reflection's ReflectionService decodes and
 * indexes every descriptor twice and parses its own reflection.proto twice when constructed:
 * about 0.2 s of CPU at every node start, for a service only tools ask. The built service is
 * kept for the process, so every server of a process (tests start many) shares one.
 */
import type * as grpc from '@grpc/grpc-js';
import type { ReflectionService } from '@grpc/reflection';

/** The reflection services' one method each, as @grpc/reflection registers them. */
const reflectionMethods = ['/grpc.reflection.v1.ServerReflection/ServerReflectionInfo', '/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo'] as const;

interface BuiltMethod {
  readonly definition: grpc.MethodDefinition<unknown, unknown>;
  readonly handler: grpc.handleBidiStreamingCall<unknown, unknown>;
}

const built = new WeakMap<() => ReflectionService, Map<string, BuiltMethod>>();

/** What `reflection().addToServer` registers, by method path, without a server. */
function methodsOf(reflection: () => ReflectionService): Map<string, BuiltMethod> {
  let methods = built.get(reflection);
  if (methods === undefined) {
    const captured = new Map<string, BuiltMethod>();
    const recorder = {
      addService(definition: grpc.ServiceDefinition, implementation: grpc.UntypedServiceImplementation): void {
        for (const [name, method] of Object.entries(definition)) {
          captured.set(method.path, { definition: method, handler: implementation[name] as grpc.handleBidiStreamingCall<unknown, unknown> });
        }
      },
    };
    reflection().addToServer(recorder as unknown as Pick<grpc.Server, 'addService'>);
    methods = captured;
    built.set(reflection, methods);
  }
  return methods;
}

/**
 * Registers both reflection services on `server`; `reflection` (the same function for every
 * server, so its result is shared) constructs the ReflectionService on the first reflection call.
 */
export function addLazyReflection(server: grpc.Server, reflection: () => ReflectionService): void {
  for (const path of reflectionMethods) {
    const method = (): BuiltMethod => {
      const found = methodsOf(reflection).get(path);
      if (found === undefined) throw new Error(`@grpc/reflection registered no ${path}`);
      return found;
    };
    const definition: grpc.MethodDefinition<unknown, unknown> = {
      path,
      requestStream: true,
      responseStream: true,
      requestSerialize: (value) => method().definition.requestSerialize(value),
      requestDeserialize: (bytes) => method().definition.requestDeserialize(bytes),
      responseSerialize: (value) => method().definition.responseSerialize(value),
      responseDeserialize: (bytes) => method().definition.responseDeserialize(bytes),
    };
    server.addService({ ServerReflectionInfo: definition }, { ServerReflectionInfo: (call: grpc.ServerDuplexStream<unknown, unknown>) => method().handler(call) });
  }
}
