// The in-page halves of BrowserGym's observation pipeline (specs/browsergym.md §3.2): give every
// standard HTML element a `bid` attribute and smuggle it into `aria-roledescription` and
// `aria-description` (Chrome's AX tree exposes one or the other for every role), then strip the
// smuggled text again once the tree is read. Plain JavaScript source, evaluated in the page: a
// TypeScript function would carry the transpiler's helpers into a page that lacks them.

const STANDARD_TAGS =
  'a abbr address area article aside audio b base bdi bdo blockquote body br button canvas caption cite code col colgroup data datalist dd del ' +
  'details dfn dialog div dl dt em embed fieldset figcaption figure footer form frame h1 h2 h3 h4 h5 h6 head header hgroup hr html i iframe img ' +
  'input ins kbd label legend li link main map mark menu meta meter nav noscript object ol optgroup option output p param picture pre progress q ' +
  'rp rt ruby s samp script search section select slot small source span strong style sub summary sup svg table tbody td template textarea tfoot th ' +
  'thead time title tr track u ul var video wbr';

/** Marks the document: bids persist on the elements, the counter on window (rules B1–B3, B6, B7). */
export const MARK_ELEMENTS = `(() => {
  const STANDARD = new Set(${JSON.stringify(STANDARD_TAGS)}.split(' '));
  let counter = window.browsergym_elem_counter || 0;
  const seen = new Set();
  for (const el of Array.from(document.querySelectorAll('*'))) {
    if (!STANDARD.has(el.tagName.toLowerCase())) continue;
    let bid = el.getAttribute('bid');
    if (bid === null || seen.has(bid)) {
      bid = String(counter++);
      el.setAttribute('bid', bid);
    }
    seen.add(bid);
    if (typeof el.value === 'string' && el.tagName !== 'LI') el.setAttribute('value', el.value);
    if (el.type === 'checkbox' || el.type === 'radio') {
      if (el.checked) el.setAttribute('checked', ''); else el.removeAttribute('checked');
    }
    for (const attr of ['aria-roledescription', 'aria-description']) {
      el.setAttribute(attr, 'browsergym_id_' + bid + ' ' + (el.getAttribute(attr) || ''));
    }
  }
  window.browsergym_elem_counter = counter;
})()`;

/** Removes the smuggled prefixes; drops an attribute left empty (rule B8). */
export const UNMARK_ELEMENTS = `(() => {
  for (const el of Array.from(document.querySelectorAll('[aria-roledescription], [aria-description]'))) {
    for (const attr of ['aria-roledescription', 'aria-description']) {
      const value = el.getAttribute(attr);
      if (value === null) continue;
      const stripped = value.replace(/^browsergym_id_\\S*\\s/, '');
      if (stripped === '') el.removeAttribute(attr); else el.setAttribute(attr, stripped);
    }
  }
})()`;

/**
 * A simplified \`pruned_html\`: elements with their bid first, scripts/styles/br dropped, attribute-less
 * html/body/div/span/p/i unwrapped, one-space indentation. Not byte-equal to BrowserGym's (which runs
 * BeautifulSoup's prettify, §3.9); the model reads \`axtree_txt\`.
 */
export const PRUNED_HTML = `(() => {
  const out = [];
  const esc = (s) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
  const walk = (node, depth) => {
    if (node.nodeType === 3) {
      const text = (node.textContent || '').trim();
      if (text) out.push(' '.repeat(depth) + esc(text));
      return;
    }
    if (node.nodeType !== 1) return;
    const tag = node.tagName.toLowerCase();
    if (['script', 'style', 'link', 'br', 'meta'].includes(tag)) return;
    const attrs = Array.from(node.attributes)
      .filter((a) => !a.name.startsWith('browsergym_') && a.name !== 'bid')
      .map((a) => ({ name: a.name, value: a.name.startsWith('aria-') ? a.value.replace(/^browsergym_id_\\S*\\s/, '') : a.value }))
      .filter((a) => !(a.name.startsWith('aria-') && a.value === ''));
    if (['html', 'body', 'div', 'span', 'p', 'i'].includes(tag) && attrs.length === 0) {
      for (const child of Array.from(node.childNodes)) walk(child, depth);
      return;
    }
    const bid = node.getAttribute('bid');
    const attrText = (bid === null ? '' : ' bid="' + bid + '"') + attrs.map((a) => (' ' + a.name + '="' + a.value + '"')).join('');
    out.push(' '.repeat(depth) + '<' + tag + attrText + '>');
    for (const child of Array.from(node.childNodes)) walk(child, depth + 1);
    out.push(' '.repeat(depth) + '</' + tag + '>');
  };
  walk(document.documentElement, 0);
  return out.join('\\n') + '\\n';
})()`;
