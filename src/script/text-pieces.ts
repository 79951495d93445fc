/**
 * String operations whose work grows with a string's length, done a piece of PIECE_UNITS at a time
 * with a pace between pieces (pacing.ts), so none holds the event loop for long whatever the
 * string; each gives exactly what the one-piece JavaScript operation would.
 */
import { PIECE_UNITS, type Pace } from './pacing.js';
import { checkStringLength, makeString, type ValueCaps } from './values.js';

function isHighSurrogate(unit: number): boolean {
  return unit >= 0xd800 && unit <= 0xdbff;
}

function isLowSurrogate(unit: number): boolean {
  return unit >= 0xdc00 && unit <= 0xdfff;
}

/** The end of the piece of `text` that starts at `start`: about PIECE_UNITS on, never inside a surrogate pair. */
function pieceEnd(text: string, start: number, units: number): number {
  const end = Math.min(text.length, start + units);
  return isHighSurrogate(text.charCodeAt(end - 1)) && isLowSurrogate(text.charCodeAt(end)) ? end + 1 : end;
}

/** Whether `text` holds a UTF-16 surrogate (a character outside the BMP, or a lone half). */
function hasSurrogates(text: string): boolean {
  return /[\uD800-\uDFFF]/.test(text);
}

/** Walks the characters (code points) of `text` a piece at a time, with a pace between pieces, until `visit` says stop. */
async function eachCodePoint(text: string, pace: Pace, visit: (index: number, width: number) => boolean): Promise<void> {
  for (let start = 0; start < text.length; ) {
    const wait = pace();
    if (wait !== undefined) await wait;
    const end = pieceEnd(text, start, PIECE_UNITS);
    for (let index = start; index < end; ) {
      const width = isHighSurrogate(text.charCodeAt(index)) && isLowSurrogate(text.charCodeAt(index + 1)) ? 2 : 1;
      if (visit(index, width)) return;
      index += width;
    }
    start = end;
  }
}

/** Characters (code points) in `text`, counted a piece at a time (a million take a few milliseconds). */
export async function codePointLength(text: string, pace: Pace): Promise<number> {
  if (!hasSurrogates(text)) return text.length;
  let count = 0;
  await eachCodePoint(text, pace, () => (count++, false));
  return count;
}

/** The character (code point) at `position` of `text`, counting from 0, a piece at a time; undefined past the end. */
export async function codePointAtIndex(text: string, position: number, pace: Pace): Promise<string | undefined> {
  if (!hasSurrogates(text)) return position < text.length ? text[position] : undefined;
  let seen = 0;
  let found: string | undefined;
  await eachCodePoint(text, pace, (index, width) => {
    if (seen++ !== position) return false;
    found = text.slice(index, index + width);
    return true;
  });
  return found;
}

// ------------------------------------------------------------------ case mapping in pieces

/** The capital sigma, whose lowercase depends on its context (Unicode's Final_Sigma). */
const capitalSigma = 'Σ';
const smallSigma = 'σ';
const finalSigma = 'ς';
const onlyCaseIgnorable = /^\p{Case_Ignorable}*$/u;
const notCaseIgnorable = /\P{Case_Ignorable}/gu;
/** The last character that is not case-ignorable (the rest after it is). */
const lastNotCaseIgnorable = /\P{Case_Ignorable}\p{Case_Ignorable}*$/u;
const cased = /^\p{Cased}/u;
const onlyAscii = /^[\0-\x7f]*$/;

/** Where, in `lowered` (the lowercase of `piece`), the character for `piece[offset]` is. */
function loweredOffset(piece: string, offset: number): number {
  return piece.slice(0, offset).toLowerCase().length;
}

/**
 * `text` in upper or lower case, exactly as toUpperCase/toLowerCase would give it, computed in
 * pieces of PIECE_UNITS with a pace between them; SCRIPT_LIMIT as soon as the result passes the
 * string cap (an uppercase can be three times longer: "ΐ" is three characters in capitals).
 *
 * Pieces are exact because the root locale's case mappings depend on no context, with one
 * exception: a capital sigma is final (ς) when the nearest character before it that is not
 * case-ignorable is cased and the nearest one after it is not (ICU's rule, the one V8 applies).
 * Only two sigmas of a piece can see past its edges: the first, when nothing but case-ignorable
 * characters precede it in the piece, and the last, when nothing but case-ignorable ones follow
 * it. The first is decided from what the pieces before ended with (`lastCased`); the last, when
 * it is final within its piece, stays pending until a later piece shows the next character that
 * is not case-ignorable, and is then corrected in place.
 */
export async function caseMapped(text: string, toUpper: boolean, caps: ValueCaps, pace: Pace, pieceUnits = PIECE_UNITS): Promise<string> {
  // ASCII maps in one go at half a millisecond per million characters, and makes no garbage of pieces.
  if (text.length <= pieceUnits || onlyAscii.test(text)) return makeString(toUpper ? text.toUpperCase() : text.toLowerCase(), caps);
  const withSigma = !toUpper && text.includes(capitalSigma);
  const pieces: string[] = [];
  let length = 0;
  /** Whether the last character so far that is not case-ignorable is cased (none yet: false). */
  let lastCased = false;
  /** A sigma mapped to ς that a later cased character would make σ: its piece and offset there. */
  let pending: { piece: number; offset: number } | undefined;
  const setSigma = (piece: number, offset: number, sigma: string): void => {
    const mapped = pieces[piece]!;
    pieces[piece] = mapped.slice(0, offset) + sigma + mapped.slice(offset + 1);
  };
  for (let start = 0; start < text.length; ) {
    const wait = pace();
    if (wait !== undefined) await wait;
    const end = pieceEnd(text, start, pieceUnits);
    const piece = text.slice(start, end);
    let mapped = toUpper ? piece.toUpperCase() : piece.toLowerCase();
    if (withSigma) {
      const index = pieces.length;
      notCaseIgnorable.lastIndex = 0;
      const firstSolid = notCaseIgnorable.exec(piece);
      if (pending !== undefined && firstSolid !== null) {
        if (cased.test(firstSolid[0])) setSigma(pending.piece, pending.offset, smallSigma);
        pending = undefined;
      }
      const first = piece.indexOf(capitalSigma);
      const firstAtEdge = first >= 0 && onlyCaseIgnorable.test(piece.slice(0, first));
      if (firstAtEdge) {
        // Within the piece this sigma had nothing cased before it, so it became σ; with what came
        // before, it is final when that was cased and nothing cased follows it.
        notCaseIgnorable.lastIndex = first + 1;
        const next = notCaseIgnorable.exec(piece);
        const offset = loweredOffset(piece, first);
        if (lastCased && next === null) {
          mapped = mapped.slice(0, offset) + finalSigma + mapped.slice(offset + 1);
          pending = { piece: index, offset };
        } else if (lastCased && !cased.test(next![0])) {
          mapped = mapped.slice(0, offset) + finalSigma + mapped.slice(offset + 1);
        }
      }
      const last = piece.lastIndexOf(capitalSigma);
      if (last >= 0 && !(firstAtEdge && last === first) && onlyCaseIgnorable.test(piece.slice(last + 1))) {
        // Its left side is within the piece; it is final only if nothing cased comes after the piece.
        const offset = mapped.length - piece.slice(last + 1).toLowerCase().length - 1;
        if (mapped[offset] === finalSigma) pending = { piece: index, offset };
      }
      const solid = lastNotCaseIgnorable.exec(piece);
      if (solid !== null) lastCased = cased.test(solid[0]);
    }
    pieces.push(mapped);
    length += mapped.length;
    checkStringLength(length, caps);
    start = end;
  }
  return makeString(pieces.join(''), caps);
}
