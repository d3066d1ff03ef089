// Click tasks (specs/browsergym.md §5.6): one or two clicks on a named element. Goal texts follow
// MiniWoB's patterns; layouts and handlers are webgrpo's own.

import type { MiniwobTask } from './page.ts';
import { distinctStrings, escapeHtml, pick, randi, sample, sentence, shuffle, WORDS } from './page.ts';

// Clicking the named thing wins (+1); clicking a wrong one loses (−1); time-discounted like MiniWoB.
const WIN = 'core.endEpisode(1, true);';
const LOSE = 'core.endEpisode(-1);';

export const clickTest: MiniwobTask = {
  name: 'click-test',
  description: 'Click on a single button.',
  generate: (rng) => {
    const size = randi(rng, 35, 100);
    return {
      title: 'Click Test Task',
      goal: 'Click the button.',
      area: `<button id="subbtn" style="margin-left:${randi(rng, 0, 40)}px; margin-top:${randi(rng, 0, 40)}px; width:${size}px; height:${size}px;">Click Me!</button>`,
      script: `byId('subbtn').addEventListener('click', function () { ${WIN} });`,
    };
  },
};

export const clickTest2: MiniwobTask = {
  name: 'click-test-2',
  description: 'Click on one of two buttons.',
  generate: (rng) => {
    const order = shuffle(rng, ['ONE', 'TWO']);
    return {
      title: 'Click Test Task',
      goal: 'Click button ONE.',
      area: order.map((label) => `<button id="btn-${label}" style="margin-top:${randi(rng, 0, 60)}px">${label}</button>`).join(''),
      script: `byId('btn-ONE').addEventListener('click', function () { ${WIN} }); byId('btn-TWO').addEventListener('click', function () { ${LOSE} });`,
    };
  },
};

const BUTTON_LABELS = ['submit', 'okay', 'ok', 'yes', 'no', 'cancel', 'next', 'previous'];

export const clickButton: MiniwobTask = {
  name: 'click-button',
  description: 'Click on a specific button in a generated form.',
  generate: (rng) => {
    const labels = sample(rng, BUTTON_LABELS, 3).map((l) => (rng.int(2) ? l[0]!.toUpperCase() + l.slice(1) : l));
    const target = pick(rng, labels);
    const items = shuffle(rng, [
      ...labels.map((l) => `<button class="choice" data-label="${escapeHtml(l)}">${escapeHtml(l)}</button>`),
      `<input type="text">`,
      `<span>${escapeHtml(sentence(rng, 3))}</span>`,
      `<input type="text">`,
    ]);
    return {
      title: 'Click Button Task',
      goal: `Click on the "${target}" button.`,
      area: items.map((item) => `<div>${item}</div>`).join(''),
      data: { target },
      script: `document.querySelectorAll('button.choice').forEach(function (b) {
  b.addEventListener('click', function () { if (b.dataset.label === TASK.target) { ${WIN} } else { ${LOSE} } });
});`,
    };
  },
};

export const unicodeTest: MiniwobTask = {
  name: 'unicode-test',
  description: 'Click on the button with the correct Unicode text.',
  generate: (rng) => {
    const labels = sample(rng, ['ÖK', 'Cancél', '♥♥♥', '确定', '取消', 'ヘルプ'], 3);
    const target = pick(rng, labels);
    return {
      title: 'Click Button Task',
      goal: `Click on the "${target}" button.`,
      area: shuffle(rng, labels).map((l) => `<div><button class="choice" data-label="${escapeHtml(l)}">${escapeHtml(l)}</button></div>`).join(''),
      data: { target },
      script: `document.querySelectorAll('button.choice').forEach(function (b) {
  b.addEventListener('click', function () { if (b.dataset.label === TASK.target) { ${WIN} } else { ${LOSE} } });
});`,
    };
  },
};

export const clickButtonSequence: MiniwobTask = {
  name: 'click-button-sequence',
  description: 'Click on buttons in a certain order.',
  generate: (rng) => ({
    title: 'Click Button Sequence Task',
    goal: 'Click button ONE, then click button TWO.',
    area: shuffle(rng, ['ONE', 'TWO']).map((label) => `<button id="btn-${label}" style="margin-left:${randi(rng, 0, 50)}px">${label}</button>`).join(''),
    script: `var clicks = [];
['ONE', 'TWO'].forEach(function (label) {
  byId('btn-' + label).addEventListener('click', function () {
    clicks.push(label);
    if (clicks.length === 2) { if (clicks[0] === 'ONE' && clicks[1] === 'TWO') { ${WIN} } else { ${LOSE} } }
  });
});`,
  }),
};

function dialogHtml(rng: Parameters<MiniwobTask['generate']>[0], buttons: string): string {
  return (
    `<div class="dialog" role="dialog" aria-modal="false" aria-describedby="dialog-text">` +
    `<button id="close" aria-label="Close"><span aria-hidden="true">×</span></button>` +
    `<p id="dialog-text">${escapeHtml(sentence(rng, 6))}</p>${buttons}</div>`
  );
}

export const clickDialog: MiniwobTask = {
  name: 'click-dialog',
  description: 'Click the button to close the dialog box.',
  generate: (rng) => ({
    title: 'Click Dialog Task',
    goal: 'Close the dialog box by clicking the "x".',
    area: dialogHtml(rng, ''),
    script: `byId('close').addEventListener('click', function () { ${WIN} });`,
  }),
};

export const clickDialog2: MiniwobTask = {
  name: 'click-dialog-2',
  description: 'Click a specific button in a dialog box.',
  generate: (rng) => {
    const target = pick(rng, ['x', 'Cancel', 'OK']);
    return {
      title: 'Click Dialog Task',
      goal: `Click the button in the dialog box labeled "${target}".`,
      area: dialogHtml(rng, `<button id="cancel">Cancel</button><button id="ok">OK</button>`),
      data: { target },
      script: `var ids = { close: 'x', cancel: 'Cancel', ok: 'OK' };
Object.keys(ids).forEach(function (id) {
  byId(id).addEventListener('click', function () { if (ids[id] === TASK.target) { ${WIN} } else { ${LOSE} } });
});`,
    };
  },
};

export const clickCheckboxes: MiniwobTask = {
  name: 'click-checkboxes',
  description: 'Click desired checkboxes.',
  generate: (rng) => {
    const names = distinctStrings(rng, randi(rng, 2, 7), 2, 7);
    const wanted = names.filter(() => rng.int(2) === 1);
    return {
      title: 'Click Checkboxes Task',
      goal: `Select ${wanted.length > 0 ? wanted.join(', ') : 'nothing'} and click Submit.`,
      area:
        `<div id="boxes">${names.map((n) => `<label><input type="checkbox" value="${n}">${n}</label><br>`).join('')}</div>` +
        `<button id="subbtn">Submit</button>`,
      data: { wanted },
      // MiniWoB's score: (boxes in the wanted state − boxes in the wrong state) / boxes; a win is > 0.
      script: `byId('subbtn').addEventListener('click', function () {
  var boxes = document.querySelectorAll('#boxes input'); var score = 0;
  boxes.forEach(function (b) { score += (b.checked === (TASK.wanted.indexOf(b.value) >= 0)) ? 1 : -1; });
  core.endEpisode(score / boxes.length, true);
});`,
    };
  },
};

export const clickOption: MiniwobTask = {
  name: 'click-option',
  description: 'Click option boxes.',
  generate: (rng) => {
    const names = distinctStrings(rng, randi(rng, 2, 7), 2, 7);
    const target = pick(rng, names);
    return {
      title: 'Click Option Task',
      goal: `Select ${target} and click Submit.`,
      area:
        `<div id="options">${names.map((n) => `<label><input type="radio" name="opt" value="${n}">${n}</label><br>`).join('')}</div>` +
        `<button id="subbtn">Submit</button>`,
      data: { target },
      script: `byId('subbtn').addEventListener('click', function () {
  var chosen = document.querySelector('#options input:checked');
  if (chosen && chosen.value === TASK.target) { ${WIN} } else { ${LOSE} }
});`,
    };
  },
};

export const clickTab: MiniwobTask = {
  name: 'click-tab',
  description: 'Click on a tab element.',
  generate: (rng) => {
    const open = randi(rng, 1, 4);
    const target = pick(rng, [1, 2, 3].filter((k) => k !== open));
    const tabs = [1, 2, 3]
      .map((k) => `<li role="tab" aria-selected="${k === open}" aria-expanded="${k === open}"${k === open ? ` aria-controls="tabs-${k}"` : ''}><a href="#tabs-${k}" data-tab="${k}">Tab #${k}</a></li>`)
      .join('');
    return {
      title: 'Click Tab Task',
      goal: `Click on Tab #${target}.`,
      area: `<ul role="tablist">${tabs}</ul><div id="tabs-${open}" role="tabpanel" aria-label="Tab #${open}"><p>${escapeHtml(sentence(rng, 10))}</p></div>`,
      data: { target },
      // The links must not navigate: any URL change ends a BrowserGym episode with reward 0.
      script: `document.querySelectorAll('a[data-tab]').forEach(function (a) {
  a.addEventListener('click', function (e) { e.preventDefault(); if (Number(a.dataset.tab) === TASK.target) { ${WIN} } else { ${LOSE} } });
});`,
    };
  },
};

const WIDGETS = ['radio', 'checkbox', 'text', 'textarea', 'button'] as const;

export const clickWidget: MiniwobTask = {
  name: 'click-widget',
  description: 'Click on a specific widget in a generated form.',
  generate: (rng) => {
    const kinds = Array.from({ length: 5 }, () => pick(rng, WIDGETS));
    const target = pick(rng, kinds);
    const html = kinds.map((kind) => {
      const word = pick(rng, WORDS);
      switch (kind) {
        case 'radio':
        case 'checkbox':
          return `<div class="widget" data-type="${kind}"><label><input type="${kind}">${word}</label></div>`;
        case 'text':
          return `<div class="widget" data-type="text"><input type="text" value="${word}"></div>`;
        case 'textarea':
          return `<div class="widget" data-type="textarea"><textarea>${word}</textarea></div>`;
        case 'button':
          return `<div class="widget" data-type="button"><button>${word}</button></div>`;
      }
    });
    return {
      title: 'Click Widget Task',
      goal: `Click on a "${target}" widget.`,
      area: html.join(''),
      data: { target },
      script: `document.querySelectorAll('.widget').forEach(function (w) {
  w.addEventListener('click', function () { if (w.dataset.type === TASK.target) { ${WIN} } else { ${LOSE} } });
});`,
    };
  },
};

export const clickCollapsible: MiniwobTask = {
  name: 'click-collapsible',
  description: 'Click a collapsible element to expand it.',
  generate: (rng) => ({
    title: 'Click Collapsible Task',
    goal: 'Expand the section below and click submit.',
    area:
      `<div id="section" role="button" tabindex="0" aria-expanded="false">Section #${randi(rng, 1, 100)}</div>` +
      `<div id="panel" style="display:none"><p>${escapeHtml(sentence(rng, 8))}</p></div><button id="subbtn">Submit</button>`,
    script: `var section = byId('section');
section.addEventListener('click', function () {
  var open = section.getAttribute('aria-expanded') !== 'true';
  section.setAttribute('aria-expanded', String(open));
  byId('panel').style.display = open ? 'block' : 'none';
});
byId('subbtn').addEventListener('click', function () { if (section.getAttribute('aria-expanded') === 'true') { ${WIN} } else { ${LOSE} } });`,
  }),
};
