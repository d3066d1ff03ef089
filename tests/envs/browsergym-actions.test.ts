// BrowserGym's action text parser (specs/browsergym.md §4.2): non-strict scanning for calls with
// Python literals; what does not parse is no action at all.

import { describe, expect, it } from 'vitest';
import { parseActions, pyValueRepr, PyFloat } from '../../env-server/envs/browsergym/action-parser.ts';

const names = (text: string) => parseActions(text).map((c) => `${c.name}(${[...c.args.map(pyValueRepr), ...c.kwargs.map(([k, v]) => `${k}=${pyValueRepr(v)}`)].join(', ')})`);

describe('parseActions', () => {
  it('the spec examples', () => {
    expect(names('click("13")')).toEqual(["click('13')"]);
    expect(names("Action: click('13')")).toEqual(["click('13')"]);
    expect(names("```\nclick('13')\n```")).toEqual(["click('13')"]);
    expect(names("click('13') fill('14', 'a')")).toEqual(["click('13')", "fill('14', 'a')"]);
    expect(names('invalid_action_format')).toEqual([]);
    expect(names("click('13'")).toEqual([]);
    expect(names("fill('14', 'Don't')")).toEqual([]);
    expect(names('click(13)')).toEqual(['click(13)']);
  });

  it('Python literals: escapes, quotes, numbers, containers, keywords, comments', () => {
    expect(names(`fill('14', "Don't")`)).toEqual([`fill('14', "Don't")`]);
    expect(parseActions("fill('1', 'a\\nb\\x41\\u00e9')")[0]!.args[1]).toBe('a\nbAé');
    expect(parseActions("fill('1', 'a\\\\b')")[0]!.args[1]).toBe('a\\b');
    expect(names("click('5', button='right', modifiers=['Shift', 'Control'],)")).toEqual(["click('5', button='right', modifiers=['Shift', 'Control'])"]);
    expect(names('scroll(0, -300.5)')).toEqual(['scroll(0, -300.5)']);
    expect(parseActions('noop(1.0)')[0]!.args[0]).toEqual(new PyFloat(1));
    expect(names("x(True, None, (1,), {'a': [2]})")).toEqual(["x(True, None, (1,), {'a': [2]})"]);
    expect(names("# click('1')\nclick('2')")).toEqual(["click('2')"]);
    expect(names("fill('1', '''two\nlines''')")).toEqual(["fill('1', 'two\\nlines')"]);
    expect(names("fill('1', 'raw\nnewline')")).toEqual([]);
  });
});
