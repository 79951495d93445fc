/** Plain-text and Markdown tables for benchmark results: the first column left-aligned, the rest right-aligned. */

export type Cell = string | number;

function cellText(cell: Cell): string {
  return typeof cell === 'number' ? String(cell) : cell;
}

/** Columns padded to their widest cell, two spaces apart. */
export function textTable(header: readonly Cell[], rows: readonly (readonly Cell[])[]): string[] {
  const all = [header, ...rows].map((row) => row.map(cellText));
  const widths = header.map((_, column) => Math.max(...all.map((row) => (row[column] ?? '').length)));
  return all.map((row) =>
    row
      .map((cell, column) => (column === 0 ? cell.padEnd(widths[column] ?? 0) : cell.padStart(widths[column] ?? 0)))
      .join('  ')
      .trimEnd(),
  );
}

export function markdownTable(header: readonly Cell[], rows: readonly (readonly Cell[])[]): string[] {
  const line = (row: readonly Cell[]): string => `| ${row.map(cellText).join(' | ')} |`;
  return [line(header), `| ${header.map((_, column) => (column === 0 ? '---' : '---:')).join(' | ')} |`, ...rows.map(line)];
}

/** 12345.6 -> "12,346". */
export function grouped(value: number): string {
  return Math.round(value).toLocaleString('en-US');
}

/** Milliseconds with precision that suits their size: 0.412, 4.12, 41.2, 412. */
export function milliseconds(value: number): string {
  if (value >= 100) return value.toFixed(0);
  if (value >= 10) return value.toFixed(1);
  if (value >= 1) return value.toFixed(2);
  return value.toFixed(3);
}

/** Counts by code: "UNAVAILABLE 3, DEADLINE_EXCEEDED 1", or "0" when there are none. */
export function countsText(counts: Readonly<Record<string, number>>): string {
  const entries = Object.entries(counts);
  return entries.length === 0 ? '0' : entries.map(([code, count]) => `${code} ${count}`).join(', ');
}
