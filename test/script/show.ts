/** Prints a parsed script as compact S-expressions, so parser tests can state the exact tree. */
import type { Expression, Script, Statement } from '../../src/script/ast.js';
import { ScriptEntry, type ScriptValue } from '../../src/script/values.js';

function showValue(value: ScriptValue): string {
  if (typeof value === 'bigint') return value.toString();
  if (typeof value === 'number') return `${value}f`;
  if (value instanceof ScriptEntry || Array.isArray(value)) throw new Error('literals are scalars');
  return JSON.stringify(value);
}

function list(head: string, ...parts: (string | undefined)[]): string {
  return `(${[head, ...parts.filter((part) => part !== undefined)].join(' ')})`;
}

function option(name: string, expression: Expression | undefined): string | undefined {
  return expression === undefined ? undefined : `${name} ${showExpression(expression)}`;
}

export function showExpression(expression: Expression): string {
  switch (expression.kind) {
    case 'literal':
      return showValue(expression.value);
    case 'list':
      return `[${expression.items.map(showExpression).join(' ')}]`;
    case 'variable':
      return expression.name;
    case 'param':
      return `@${expression.name}`;
    case 'negate':
      return list('-', showExpression(expression.operand));
    case 'not':
      return list('not', showExpression(expression.operand));
    case 'binary':
      return list(expression.operator, showExpression(expression.left), showExpression(expression.right));
    case 'found':
      return list(expression.negated ? 'not-found' : 'found', showExpression(expression.operand));
    case 'index':
      return list('index', showExpression(expression.target), showExpression(expression.index));
    case 'call':
      return list(expression.name, ...expression.args.map(showExpression));
    case 'get':
      return list('get', showExpression(expression.key));
    case 'getByPrefix':
      return list('get-by-prefix', showExpression(expression.prefix));
    case 'exists':
      return list('exists', showExpression(expression.key));
    case 'delete':
      return list('delete', showExpression(expression.key), option('cmprev', expression.ifModRevision));
    case 'incr':
      return list('incr', showExpression(expression.key), option('by', expression.delta), option('ex', expression.ttlMs));
    case 'set':
      return list(
        'set',
        showExpression(expression.key),
        showExpression(expression.value),
        expression.ifAbsent ? 'nx' : undefined,
        expression.ifPresent ? 'xx' : undefined,
        option('ex', expression.ttlMs),
        option('cmprev', expression.ifModRevision),
      );
  }
}

function showBlock(head: string, statements: readonly Statement[]): string {
  return list(head, ...statements.map(showStatement));
}

export function showStatement(statement: Statement): string {
  switch (statement.kind) {
    case 'let':
      return list('let', statement.name, showExpression(statement.value));
    case 'action':
      return showExpression(statement.action);
    case 'if':
      return list(
        'if',
        showExpression(statement.condition),
        showBlock('then', statement.then),
        statement.otherwise === undefined ? undefined : showBlock('else', statement.otherwise),
      );
    case 'for':
      return list('for', statement.name, showExpression(statement.iterable), showBlock('do', statement.body));
    case 'return':
      return list('return', statement.value === undefined ? undefined : showExpression(statement.value));
    case 'throw':
      return list('throw', showExpression(statement.value));
    case 'block':
      return showBlock('begin', statement.body);
    case 'rollback':
      return '(rollback)';
  }
}

export function show(script: Script): string {
  return script.body.map(showStatement).join(' ');
}
