/**
 * Turns script source into tokens. New lines are tokens (they end statements); other white space
 * and comments (`#` or `//` to the end of the line) are dropped. Words keep their spelling and a
 * lower-case form, because keywords are case-insensitive and variable names are not.
 */
import { parseError } from './script-errors.js';
import type { SourcePosition } from './source-position.js';

export type Punctuation = '(' | ')' | '[' | ']' | ',' | ';' | '=' | '==' | '!=' | '<' | '<=' | '>' | '>=' | '+' | '-' | '*' | '/' | '%';

export type Token =
  | { readonly kind: 'word'; readonly text: string; readonly lower: string; readonly position: SourcePosition }
  | { readonly kind: 'string'; readonly value: string; readonly position: SourcePosition }
  /** A non-negative integer literal of any size; the parser checks its range. */
  | { readonly kind: 'int'; readonly value: bigint; readonly position: SourcePosition }
  | { readonly kind: 'float'; readonly value: number; readonly position: SourcePosition }
  | { readonly kind: 'param'; readonly name: string; readonly position: SourcePosition }
  | { readonly kind: 'punctuation'; readonly text: Punctuation; readonly position: SourcePosition }
  | { readonly kind: 'newline'; readonly position: SourcePosition }
  | { readonly kind: 'end-of-script'; readonly position: SourcePosition };

const twoCharacterPunctuation = new Set<string>(['==', '!=', '<=', '>=']);
const oneCharacterPunctuation = new Set<string>(['(', ')', '[', ']', ',', ';', '=', '<', '>', '+', '-', '*', '/', '%']);
const quotes = new Set(['"', "'", '`']);
const simpleEscapes: Readonly<Record<string, string>> = {
  n: '\n',
  t: '\t',
  r: '\r',
  '0': '\0',
  b: '\b',
  f: '\f',
  '\\': '\\',
  '/': '/',
  '"': '"',
  "'": "'",
  '`': '`',
};

const isDigit = (char: string | undefined): boolean => char !== undefined && char >= '0' && char <= '9';
const isWordStart = (char: string | undefined): boolean => char !== undefined && /^[A-Za-z_]$/.test(char);
const isWordPart = (char: string | undefined): boolean => char !== undefined && /^[A-Za-z0-9_]$/.test(char);

class Lexer {
  private index = 0;
  private line = 1;
  private column = 1;
  private readonly tokens: Token[] = [];

  constructor(private readonly source: string) {}

  run(): Token[] {
    // Every turn consumes at least one character, so the loop ends.
    while (this.index < this.source.length) this.scanOne();
    this.tokens.push({ kind: 'end-of-script', position: this.here() });
    return this.tokens;
  }

  private here(): SourcePosition {
    return { line: this.line, column: this.column, offset: this.index };
  }

  private peek(ahead = 0): string | undefined {
    return this.source[this.index + ahead];
  }

  /** Consumes one character (a whole surrogate pair counts as one column). */
  private advance(): string {
    const codePoint = this.source.codePointAt(this.index)!;
    const char = String.fromCodePoint(codePoint);
    this.index += char.length;
    if (char === '\n' || (char === '\r' && this.peek() !== '\n')) {
      this.line++;
      this.column = 1;
    } else if (char !== '\r') {
      this.column++;
    }
    return char;
  }

  private scanOne(): void {
    const char = this.peek()!;
    const start = this.here();
    if (char === '\n' || char === '\r') {
      this.advance();
      this.tokens.push({ kind: 'newline', position: start });
    } else if (char === ' ' || char === '\t' || char === '\f' || char === '\v' || char === '\ufeff') {
      this.advance();
    } else if (char === '#' || (char === '/' && this.peek(1) === '/')) {
      while (this.index < this.source.length && this.peek() !== '\n' && this.peek() !== '\r') this.advance();
    } else if (quotes.has(char)) {
      this.tokens.push({ kind: 'string', value: this.scanString(), position: start });
    } else if (isDigit(char)) {
      this.scanNumber(start);
    } else if (isWordStart(char)) {
      const text = this.scanWord();
      this.tokens.push({ kind: 'word', text, lower: text.toLowerCase(), position: start });
    } else if (char === '@') {
      this.advance();
      if (!isWordStart(this.peek())) throw parseError('`@` must be followed by a parameter name ([A-Za-z_][A-Za-z0-9_]*)', start);
      this.tokens.push({ kind: 'param', name: this.scanWord(), position: start });
    } else {
      this.scanPunctuation(start);
    }
  }

  private scanWord(): string {
    const begin = this.index;
    while (isWordPart(this.peek())) this.advance();
    return this.source.slice(begin, this.index);
  }

  private scanDigits(): string {
    const begin = this.index;
    while (isDigit(this.peek())) this.advance();
    return this.source.slice(begin, this.index);
  }

  private scanNumber(start: SourcePosition): void {
    let text = this.scanDigits();
    let isFloat = false;
    if (this.peek() === '.' && isDigit(this.peek(1))) {
      this.advance();
      text += `.${this.scanDigits()}`;
      isFloat = true;
    }
    if ((this.peek() === 'e' || this.peek() === 'E') && (isDigit(this.peek(1)) || (/^[+-]$/.test(this.peek(1) ?? '') && isDigit(this.peek(2))))) {
      text += this.advance();
      if (!isDigit(this.peek())) text += this.advance();
      text += this.scanDigits();
      isFloat = true;
    }
    if (isWordPart(this.peek()) || this.peek() === '.') throw parseError(`malformed number starting ${JSON.stringify(text)}`, start);
    if (!isFloat) {
      this.tokens.push({ kind: 'int', value: BigInt(text), position: start });
      return;
    }
    const value = Number(text);
    if (!Number.isFinite(value)) throw parseError(`the float ${text} is too large`, start);
    this.tokens.push({ kind: 'float', value, position: start });
  }

  private scanString(): string {
    const start = this.here();
    const quote = this.advance();
    let value = '';
    for (;;) {
      const char = this.peek();
      if (char === undefined || char === '\n' || char === '\r') throw parseError('unterminated string', start);
      if (char === quote) {
        this.advance();
        return value;
      }
      value += char === '\\' ? this.scanEscape() : this.advance();
    }
  }

  private scanEscape(): string {
    const start = this.here();
    this.advance();
    const char = this.peek();
    if (char === undefined) throw parseError('unterminated string', start);
    if (char === 'u') {
      this.advance();
      return this.scanUnicodeEscape(start);
    }
    const simple = simpleEscapes[char];
    if (simple === undefined) throw parseError(`unknown escape \\${char}`, start);
    this.advance();
    return simple;
  }

  /** `\uXXXX` or `\u{X...}` (after the `u`). */
  private scanUnicodeEscape(start: SourcePosition): string {
    let hex = '';
    if (this.peek() === '{') {
      this.advance();
      while (hex.length <= 6 && /^[0-9A-Fa-f]$/.test(this.peek() ?? '')) hex += this.advance();
      if (this.peek() !== '}') throw parseError('malformed \\u{...} escape', start);
      this.advance();
    } else {
      while (hex.length < 4 && /^[0-9A-Fa-f]$/.test(this.peek() ?? '')) hex += this.advance();
      if (hex.length !== 4) throw parseError('malformed \\uXXXX escape', start);
    }
    const codePoint = Number.parseInt(hex, 16);
    if (hex.length === 0 || codePoint > 0x10ffff) throw parseError('malformed \\u{...} escape', start);
    return String.fromCodePoint(codePoint);
  }

  private scanPunctuation(start: SourcePosition): void {
    const two = this.source.slice(this.index, this.index + 2);
    const text = twoCharacterPunctuation.has(two) ? two : oneCharacterPunctuation.has(this.peek()!) ? this.peek()! : undefined;
    if (text === undefined) {
      const char = String.fromCodePoint(this.source.codePointAt(this.index)!);
      const hint = char === '!' ? ' (use `not`)' : char === '&' || char === '|' ? ' (use `and` / `or`)' : '';
      throw parseError(`unexpected character ${JSON.stringify(char)}${hint}`, start);
    }
    for (let count = 0; count < text.length; count++) this.advance();
    this.tokens.push({ kind: 'punctuation', text: text as Punctuation, position: start });
  }
}

export function tokenize(source: string): Token[] {
  return new Lexer(source).run();
}
