// The error text a model reads after a failed action, in BrowserGym's wording (`<PythonClass>:
// <message>`, specs/browsergym.md §4.3). Playwright's Node messages carry a call log and ANSI colour
// codes (`\x1b[2m`) that are noise to a model (and cost tokens): only the message's first line is
// kept, coloured nothing, with the API named as Python's Playwright names it (`Locator.click`).

/** CSI escape sequences (colours, cursor moves): ESC [ params final-byte. */
const ANSI = /\x1b\[[0-?]*[ -/]*[@-~]/g;

/** `locator.click: …` → `Locator.click: …` (Python's client prints the class name). */
const API_PREFIX = /^(locator|page|frame|elementHandle|keyboard|mouse|browserContext)\./;

/** The first line of a Playwright error's message, without colour codes. */
export function cleanMessage(message: string): string {
  const line = message.replace(ANSI, '').split('\n')[0]!.trim();
  return line.replace(API_PREFIX, (_, api: string) => `${api[0]!.toUpperCase()}${api.slice(1)}.`);
}

/** BrowserGym's `last_action_error` for an exception that is not one of our PyErrors. */
export function actionErrorText(err: unknown): string {
  if (!(err instanceof Error)) return `Error: ${cleanMessage(String(err))}`;
  return `${err.name === 'TimeoutError' ? 'TimeoutError' : 'Error'}: ${cleanMessage(err.message)}`;
}
