/**
 * The syntax tree of a script. Every node carries the position of the token that best names it
 * in an error (an operator, a keyword, a function name), so runtime errors point where a person
 * would look. Nodes are plain readonly data: the parser builds them, the evaluator walks them.
 */
import type { SourcePosition } from './source-position.js';
import type { ScriptValue } from './values.js';

export type { SourcePosition };

/** `and` and `or` evaluate their right side only when the left does not decide. */
export type BinaryOperator = 'or' | 'and' | '+' | '-' | '*' | '/' | '%' | '==' | '!=' | '<' | '<=' | '>' | '>=';

export type Expression =
  | { readonly kind: 'literal'; readonly value: ScriptValue; readonly position: SourcePosition }
  | { readonly kind: 'list'; readonly items: readonly Expression[]; readonly position: SourcePosition }
  | { readonly kind: 'variable'; readonly name: string; readonly position: SourcePosition }
  | { readonly kind: 'param'; readonly name: string; readonly position: SourcePosition }
  | { readonly kind: 'negate'; readonly operand: Expression; readonly position: SourcePosition }
  | { readonly kind: 'not'; readonly operand: Expression; readonly position: SourcePosition }
  | {
      readonly kind: 'binary';
      readonly operator: BinaryOperator;
      readonly left: Expression;
      readonly right: Expression;
      readonly position: SourcePosition;
    }
  /** Postfix `x found` / `x not found`. */
  | { readonly kind: 'found'; readonly operand: Expression; readonly negated: boolean; readonly position: SourcePosition }
  | { readonly kind: 'index'; readonly target: Expression; readonly index: Expression; readonly position: SourcePosition }
  /** A built-in function; `name` is lower-case and known to have this many arguments. */
  | { readonly kind: 'call'; readonly name: string; readonly args: readonly Expression[]; readonly position: SourcePosition }
  | ActionExpression;

/** The expressions that read or write the store through the transaction's view. */
export type ActionExpression =
  | { readonly kind: 'get'; readonly key: Expression; readonly position: SourcePosition }
  | { readonly kind: 'getByPrefix'; readonly prefix: Expression; readonly position: SourcePosition }
  | { readonly kind: 'exists'; readonly key: Expression; readonly position: SourcePosition }
  | { readonly kind: 'delete'; readonly key: Expression; readonly ifModRevision: Expression | undefined; readonly position: SourcePosition }
  | {
      readonly kind: 'incr';
      readonly key: Expression;
      readonly delta: Expression | undefined;
      readonly ttlMs: Expression | undefined;
      readonly position: SourcePosition;
    }
  | {
      readonly kind: 'set';
      readonly key: Expression;
      readonly value: Expression;
      readonly ifAbsent: boolean;
      readonly ifPresent: boolean;
      readonly ttlMs: Expression | undefined;
      readonly ifModRevision: Expression | undefined;
      /** `lease ID`: attach the key to this lease ("<partition>.<n>") of the script's partition. */
      readonly lease: Expression | undefined;
      /** `fence TOKEN`: a fenced write (FENCED fails the whole script's commit). */
      readonly fence: Expression | undefined;
      readonly position: SourcePosition;
    };

export type Statement =
  | { readonly kind: 'let'; readonly name: string; readonly value: Expression; readonly position: SourcePosition }
  | { readonly kind: 'action'; readonly action: ActionExpression; readonly position: SourcePosition }
  | {
      readonly kind: 'if';
      readonly condition: Expression;
      readonly then: readonly Statement[];
      readonly otherwise: readonly Statement[] | undefined;
      readonly position: SourcePosition;
    }
  | {
      readonly kind: 'for';
      readonly name: string;
      readonly iterable: Expression;
      readonly body: readonly Statement[];
      readonly position: SourcePosition;
    }
  | { readonly kind: 'return'; readonly value: Expression | undefined; readonly position: SourcePosition }
  | { readonly kind: 'throw'; readonly value: Expression; readonly position: SourcePosition }
  /** `begin ... commit`; `begin ... rollback` is a block whose last statement is a rollback. */
  | { readonly kind: 'block'; readonly body: readonly Statement[]; readonly position: SourcePosition }
  | { readonly kind: 'rollback'; readonly position: SourcePosition };

/** A place where the script names a key (or a prefix) to the store. */
export interface KeyOperand {
  readonly kind: 'key' | 'prefix';
  readonly expression: Expression;
}

/** A parsed script: immutable, reusable across runs with different parameters. */
export interface Script {
  readonly body: readonly Statement[];
  /** Every `@name` reference, in source order. */
  readonly params: readonly { readonly name: string; readonly position: SourcePosition }[];
  /** Every key and prefix operand, in source order (the order routing looks at them). */
  readonly keyOperands: readonly KeyOperand[];
}
