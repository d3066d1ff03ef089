// webgrpo's MiniWoB-style tasks, by name (the names of BrowserGym's `browsergym/miniwob.<task>`).

import { clickButton, clickButtonSequence, clickCheckboxes, clickCollapsible, clickDialog, clickDialog2, clickOption, clickTab, clickTest, clickTest2, clickWidget, unicodeTest } from './click.ts';
import { chooseList, enterPassword, enterText, enterText2, enterTextDynamic, focusText, focusText2, loginUser, simpleArithmetic } from './forms.ts';
import type { MiniwobTask } from './page.ts';

const ALL: MiniwobTask[] = [
  clickTest, clickTest2, clickButton, clickButtonSequence, clickDialog, clickDialog2, clickCheckboxes, clickOption, clickTab,
  clickWidget, clickCollapsible, chooseList, enterText, enterText2, enterTextDynamic, enterPassword, focusText, focusText2,
  loginUser, simpleArithmetic, unicodeTest,
];

export const MINIWOB_TASKS: ReadonlyMap<string, MiniwobTask> = new Map(ALL.map((t) => [t.name, t]));

export type { MiniwobTask, TaskInstance } from './page.ts';
export { pageHtml } from './page.ts';
