/** Minimal RFC 4180 reader for the CSV exports (CRLF line ends; quoted cells may hold commas and doubled quotes). */
export const csvRows = (text: string): string[][] =>
  text
    .trim()
    .split('\r\n')
    .map((line) =>
      [...line.matchAll(/("(?:[^"]|"")*"|[^,]*)(?:,|$)/g)]
        .slice(0, -1)
        .map((m) => m[1].replace(/^"|"$/g, '').replace(/""/g, '"')),
    );
