// Every piece of text reaches the page through text nodes or attributes, never as markup:
// payloads are other organisations' words, and `h` is the only way this console builds DOM.

export function h(tag, attrs = {}, ...children) {
  const svg = tag.startsWith('svg:');
  const el = svg
    ? document.createElementNS('http://www.w3.org/2000/svg', tag.slice(4))
    : document.createElement(tag);
  for (const [name, value] of Object.entries(attrs || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (name.startsWith('on') && typeof value === 'function') {
      el.addEventListener(name.slice(2), value);
    } else if (name === 'dataset') {
      Object.assign(el.dataset, value);
    } else {
      el.setAttribute(name, value === true ? '' : String(value));
    }
  }
  append(el, children);
  return el;
}

function append(el, children) {
  for (const child of children.flat(Infinity)) {
    if (child === undefined || child === null || child === false) continue;
    el.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
}

/** Replaces an element's children. */
export function fill(el, ...children) {
  el.replaceChildren();
  append(el, children);
  return el;
}

/** A message box: `kind` is `error`, `info` or `ok`. */
export function message(kind, text) {
  return h('p', { class: `message ${kind}`, role: kind === 'error' ? 'alert' : 'status' }, text);
}

export function formatDate(value) {
  if (!value) return '';
  const date = new Date(value);
  if (Number.isNaN(date.getTime())) return String(value);
  return date.toISOString().replace('T', ' ').replace(/\.\d+Z$|Z$/, ' UTC');
}

/** The last segment of a DID or IRI, for display next to the full value in a title. */
export function shortId(value) {
  if (!value) return '';
  const text = String(value);
  const parts = text.split(/[:/#]/).filter(Boolean);
  return parts.length ? parts[parts.length - 1] : text;
}

export function didLabel(value) {
  return h('span', { class: 'did', title: value }, shortId(value));
}

/** A labelled form field; `input` is the control element. */
export function field(label, input, hint) {
  const id = input.id || `f-${Math.random().toString(36).slice(2, 10)}`;
  input.id = id;
  return h('div', { class: 'field' },
    h('label', { for: id }, label),
    input,
    hint ? h('small', { class: 'hint' }, hint) : null);
}
