// INVALID_JSON frames carry Python's json.loads message; these expectations were produced by
// CPython 3's json module on the same inputs.

import { describe, expect, it } from 'vitest';
import { pythonJsonError } from '../../env-server/python-json-error.ts';

describe("Python's json.loads error messages", () => {
  it.each([
    ['not json', 'Expecting value: line 1 column 1 (char 0)'],
    ['', 'Expecting value: line 1 column 1 (char 0)'],
    ['{"a":1,}', 'Expecting property name enclosed in double quotes: line 1 column 8 (char 7)'],
    ['{"a" 1}', "Expecting ':' delimiter: line 1 column 6 (char 5)"],
    ['[1 2]', "Expecting ',' delimiter: line 1 column 4 (char 3)"],
    ['{"a":"\\x"}', 'Invalid \\escape: line 1 column 7 (char 6)'],
    ['"abc', 'Unterminated string starting at: line 1 column 1 (char 0)'],
    ['{}x', 'Extra data: line 1 column 3 (char 2)'],
    ['\n\n  {', 'Expecting property name enclosed in double quotes: line 3 column 4 (char 5)'],
    ['{"é":"ü",', 'Expecting property name enclosed in double quotes: line 1 column 10 (char 9)'],
  ])('%j', (text, message) => {
    expect(pythonJsonError(text)).toBe(message);
  });

  it('returns null for text Python accepts, and for nesting too deep to scan', () => {
    expect(pythonJsonError('{"a": [1, 2.5e3, null, true, "x"]}')).toBeNull();
    expect(pythonJsonError('['.repeat(200_000))).toBeNull();
  });
});
