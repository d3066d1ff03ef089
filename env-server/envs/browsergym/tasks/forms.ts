// Form tasks (specs/browsergym.md §5.6): type given text, focus a textbox, log in, pick from a list,
// solve a sum. The answer is checked when Submit is clicked, as on MiniWoB's pages.

import type { MiniwobTask } from './page.ts';
import { FIRST_NAMES, escapeHtml, pick, randi, randomString, sample, WORDS } from './page.ts';

const WIN = 'core.endEpisode(1, true);';
const LOSE = 'core.endEpisode(-1);';

/** Submit wins iff every listed input holds its expected value. */
function submitChecks(inputs: Record<string, string>): { data: Record<string, unknown>; script: string } {
  return {
    data: { expected: inputs },
    script: `byId('subbtn').addEventListener('click', function () {
  var ok = Object.keys(TASK.expected).every(function (id) { return byId(id).value === TASK.expected[id]; });
  if (ok) { ${WIN} } else { ${LOSE} }
});`,
  };
}

// A wrapper <div> keeps the textbox at bid 14 and Submit at 15, as on MiniWoB's enter-text page.
const TEXT_FORM = `<div><input type="text" id="tt"><button id="subbtn">Submit</button></div>`;

export const enterText: MiniwobTask = {
  name: 'enter-text',
  description: 'Enter given text to a textfield.',
  generate: (rng) => {
    const text = pick(rng, FIRST_NAMES);
    return { title: 'Enter Text Task', goal: `Enter "${text}" into the text field and press Submit.`, area: TEXT_FORM, ...submitChecks({ tt: text }) };
  },
};

export const enterText2: MiniwobTask = {
  name: 'enter-text-2',
  description: 'Convert given text to upper or lower case.',
  generate: (rng) => {
    const word = pick(rng, FIRST_NAMES);
    const upper = rng.int(2) === 1;
    const shown = upper ? word.toLowerCase() : word.toUpperCase();
    return {
      title: 'Enter Text Task',
      goal: `Type "${shown}" in all ${upper ? 'upper' : 'lower'} case letters in the text input and press Submit.`,
      area: TEXT_FORM,
      ...submitChecks({ tt: upper ? word.toUpperCase() : word.toLowerCase() }),
    };
  },
};

export const enterTextDynamic: MiniwobTask = {
  name: 'enter-text-dynamic',
  description: 'Enter dynamically generated text to a textfield.',
  generate: (rng) => {
    const text = randomString(rng, 3, 6);
    return { title: 'Enter Dynamic Text Task', goal: `Enter "${text}" into the text field and press Submit.`, area: TEXT_FORM, ...submitChecks({ tt: text }) };
  },
};

function labelled(label: string, id: string, type: string): string {
  return `<p><label for="${id}">${label}</label><input type="${type}" id="${id}"></p>`;
}

export const enterPassword: MiniwobTask = {
  name: 'enter-password',
  description: 'Enter the password into the form.',
  generate: (rng) => {
    const password = randomString(rng, 2, 6);
    return {
      title: 'Enter Password Task',
      goal: `Enter the password "${password}" into both text fields and press submit.`,
      area: `<div>${labelled('Password', 'password', 'password')}${labelled('Verify password', 'verify', 'password')}<button id="subbtn">Submit</button></div>`,
      ...submitChecks({ password, verify: password }),
    };
  },
};

export const loginUser: MiniwobTask = {
  name: 'login-user',
  description: 'Enter user login details into the form.',
  generate: (rng) => {
    const username = pick(rng, FIRST_NAMES).toLowerCase();
    const password = randomString(rng, 2, 6);
    return {
      title: 'Login User Task',
      goal: `Enter the username "${username}" and the password "${password}" into the text fields and press login.`,
      area: `<div>${labelled('Username', 'username', 'text')}${labelled('Password', 'password', 'password')}<button id="subbtn">Login</button></div>`,
      ...submitChecks({ username, password }),
    };
  },
};

export const focusText: MiniwobTask = {
  name: 'focus-text',
  description: 'Focus into a text input.',
  generate: () => ({
    title: 'Focus Text Task',
    goal: 'Focus into the textbox.',
    area: `<input type="text" id="tt">`,
    script: `byId('tt').addEventListener('focus', function () { ${WIN} });`,
  }),
};

const ORDINALS = ['1st', '2nd', '3rd'];

export const focusText2: MiniwobTask = {
  name: 'focus-text-2',
  description: 'Focus on a specific text input.',
  generate: (rng) => {
    const target = randi(rng, 0, 3);
    return {
      title: 'Focus Text Task',
      goal: `Focus into the ${ORDINALS[target]} input textbox.`,
      area: [0, 1, 2].map((i) => `<input type="text" class="box" data-index="${i}">`).join(''),
      data: { target },
      script: `document.querySelectorAll('input.box').forEach(function (box) {
  box.addEventListener('focus', function () { if (Number(box.dataset.index) === TASK.target) { ${WIN} } else { ${LOSE} } });
});`,
    };
  },
};

export const chooseList: MiniwobTask = {
  name: 'choose-list',
  description: 'Choose an item from a drop down list.',
  generate: (rng) => {
    const items = sample(rng, [...FIRST_NAMES, ...WORDS.map((w) => w[0]!.toUpperCase() + w.slice(1))], randi(rng, 3, 10));
    const target = pick(rng, items);
    return {
      title: 'Choose List Task',
      goal: `Select ${target} from the list and click Submit.`,
      area: `<select id="list">${items.map((i) => `<option>${escapeHtml(i)}</option>`).join('')}</select><button id="subbtn">Submit</button>`,
      data: { target },
      script: `byId('subbtn').addEventListener('click', function () {
  var list = byId('list'); if (list.options[list.selectedIndex].text === TASK.target) { ${WIN} } else { ${LOSE} }
});`,
    };
  },
};

export const simpleArithmetic: MiniwobTask = {
  name: 'simple-arithmetic',
  description: 'Perform some arithmetic math operations.',
  generate: (rng) => {
    const a = randi(rng, 0, 10);
    const b = randi(rng, 0, 10);
    const op = pick(rng, ['+', '-', 'x']);
    const answer = op === '+' ? a + b : op === '-' ? a - b : a * b;
    return {
      title: 'Simple Math Task',
      goal: 'Solve the math problem and type your answer into the textbox. Press submit when done.',
      area: `<div id="math-problem">${a} ${op} ${b} =</div><div><input type="text" id="math-answer"><button id="subbtn">Submit</button></div>`,
      ...submitChecks({ 'math-answer': String(answer) }),
    };
  },
};

