// Sharing policies, for the operator: the list, a form (or the policy's JSON) to create one
// with every problem the API finds shown at its field, and deletion that first says what it
// revokes.

import { BASE, get, post, del, query, enc } from '../api.js';
import { h, fill, formatDate, message, field, didLabel } from '../dom.js';
import { navigate, link } from '../main.js';
import { confirmCell } from '../confirm.js';

const OPERANDS = [
  ['portOfEntryCountry', 'Port of entry country (ISO 3166 alpha-2)'],
  ['portOfExitCountry', 'Port of exit country (ISO 3166 alpha-2)'],
  ['portOfEntry', 'Port of entry (UN/LOCODE)'],
  ['portOfExit', 'Port of exit (UN/LOCODE)'],
];

// A message from the change before the page was drawn again.
let pending = null;

const short = (operand) => String(operand || '').replace(/^.*[#:]/, '');
const values = (right) => (Array.isArray(right) ? right : [right]).map((v) => (v && typeof v === 'object' ? v['@value'] ?? JSON.stringify(v) : v));

function describe(permission) {
  const rules = (permission.constraint || []).map((c) => `${short(c.leftOperand)} ${c.operator === 'isAnyOf' || short(c.operator) === 'isAnyOf' ? 'is any of' : 'is'} ${values(c.rightOperand).join(', ')}`);
  return rules.join(' and ');
}

function consequences(policy) {
  return h('div', { class: 'confirm', role: 'alertdialog', 'aria-label': 'Confirm deletion' },
    h('p', {}, h('strong', {}, 'Deleting this policy revokes the access it alone gave:')),
    h('ul', {}, (policy.permission || []).map((p) => h('li', {},
      didLabel(p.assignee), ' stops reading the consignments where ', describe(p) || 'its rules held',
      ' — except those another policy also shares with it.'))),
    h('p', {}, 'Their download links to those consignments\' documents stop working at once. What they contributed stays readable to them, notifications stay as history, and consignments published later are no longer routed by it.'));
}

function policyRow(policy, refresh) {
  const actions = confirmCell({
    ask: 'Delete…',
    explanation: consequences(policy),
    confirm: 'Delete policy and revoke',
    act: async () => {
      await del(`${BASE}/policies/${enc(policy.uid)}`);
      refresh(message('ok', `Policy ${policy.uid} deleted; its grants are revoked.`));
    },
  });
  return h('tr', { class: 'policy', dataset: { uid: policy.uid } },
    h('td', {}, h('code', {}, policy.uid)),
    h('td', {}, (policy.permission || []).map((p) => h('div', {}, didLabel(p.assignee)))),
    h('td', {}, (policy.permission || []).map((p) => h('div', {}, describe(p)))),
    h('td', {}, formatDate(policy.dateCreated)),
    actions);
}

function constraintRow(index) {
  const operand = h('select', { name: `leftOperand${index}` }, OPERANDS.map(([v, label]) => h('option', { value: v }, label)));
  const operator = h('select', { name: `operator${index}` }, h('option', { value: 'eq' }, 'is'), h('option', { value: 'isAnyOf' }, 'is any of'));
  const right = h('input', { type: 'text', name: `rightOperand${index}`, placeholder: 'KE  or  KE, TZ', spellcheck: 'false' });
  const row = h('fieldset', { class: 'constraint' }, h('legend', {}, `Rule ${index + 1}`),
    field('Field', operand), field('Operator', operator), field('Value(s)', right));
  row.read = () => {
    const list = right.value.split(',').map((v) => v.trim()).filter(Boolean);
    return { leftOperand: operand.value, operator: operator.value, rightOperand: operator.value === 'isAnyOf' ? list : (list[0] ?? '') };
  };
  row.slots = { leftOperand: operand, operator, rightOperand: right };
  return row;
}

function problemsAt(form, problems) {
  for (const old of form.querySelectorAll('.problem')) old.remove();
  const general = [];
  for (const p of problems) {
    const control = form.slotFor(p.field);
    const note = h('small', { class: 'problem', role: 'alert' }, `${p.field}: ${p.message}`);
    if (control) control.closest('.field').append(note);
    else general.push(note);
  }
  return general;
}

function createForm(refresh) {
  const uid = h('input', { type: 'url', name: 'uid', placeholder: 'https://policies.example/ke-customs (optional)' });
  const assignee = h('input', { type: 'text', name: 'assignee', placeholder: 'did:web:…:org:…', spellcheck: 'false', required: true });
  const target = h('input', { type: 'url', name: 'target', value: `${location.origin}${BASE}/consignments` });
  const rules = [constraintRow(0)];
  const rulesBox = h('div', {}, rules);
  const json = h('textarea', { name: 'policyJson', rows: 14, spellcheck: 'false' });
  const mode = h('input', { type: 'checkbox', name: 'asJson' });
  const status = h('div', { 'aria-live': 'polite' });
  const formPart = h('div', {}, field('Policy id (uid)', uid), field('Assignee (organisation DID)', assignee), field('Target', target), rulesBox,
    h('button', { type: 'button', onclick: () => { const r = constraintRow(rules.length); rules.push(r); rulesBox.append(r); } }, 'Add a rule'));
  const jsonPart = h('div', { hidden: true }, field('Policy (ODRL JSON)', json));
  const build = () => ({
    '@context': 'http://www.w3.org/ns/odrl.jsonld',
    '@type': 'Set',
    ...(uid.value.trim() ? { uid: uid.value.trim() } : {}),
    permission: [{ action: 'read', assignee: assignee.value.trim(), target: target.value.trim(), constraint: rules.map((r) => r.read()) }],
  });
  mode.addEventListener('change', () => {
    if (mode.checked) json.value = JSON.stringify(build(), null, 2);
    formPart.hidden = mode.checked;
    jsonPart.hidden = !mode.checked;
  });
  const form = h('form', {
    class: 'policy-form',
    onsubmit: async (event) => {
      event.preventDefault();
      let body;
      if (mode.checked) {
        try { body = JSON.parse(json.value); } catch (e) { fill(status, message('error', `The JSON does not parse: ${e.message}`)); return; }
      } else {
        body = build();
      }
      try {
        const created = await post(`${BASE}/policies`, body);
        refresh(message('ok', `Policy ${created.uid} created.`));
      } catch (error) {
        const problems = (error.body && error.body.properties && error.body.properties.problems) || [];
        const general = problemsAt(form, mode.checked ? [] : problems);
        fill(status, message('error', error.message), general,
          mode.checked ? h('ul', { class: 'problems' }, problems.map((p) => h('li', {}, h('code', {}, p.field), `: ${p.message}`))) : null);
      }
    },
  }, h('h2', {}, 'New policy'), h('label', { class: 'inline' }, mode, ' Edit as JSON'), formPart, jsonPart, h('button', { type: 'submit' }, 'Create policy'), status);
  form.slotFor = (path) => {
    if (path === 'uid' || path === '@id') return uid;
    if (/^permission\[0\]\.assignee/.test(path)) return assignee;
    if (/^permission\[0\]\.target/.test(path)) return target;
    const m = path.match(/^permission\[0\]\.constraint\[(\d+)\]\.(leftOperand|operator|rightOperand)/);
    return m && rules[Number(m[1])] ? rules[Number(m[1])].slots[m[2]] : null;
  };
  return form;
}

export async function policiesPage(main, { query: params, session }) {
  const cursor = params.get('cursor') || '';
  const notice = pending;
  pending = null;
  const refresh = (next) => { pending = next; navigate('/policies', { replace: true }); };
  fill(main, h('h1', {}, 'Sharing policies'), message('info', 'Loading…'));
  const page = await get(`${BASE}/policies${query({ limit: 50, cursor })}`);
  const rows = page.entities || [];
  fill(main, h('h1', {}, 'Sharing policies'), notice,
    h('p', {}, 'Who reads which consignments: each rule grants its assignee the consignments whose ports match, from the policy\'s creation on.'),
    rows.length ? h('table', { class: 'list' },
      h('thead', {}, h('tr', {}, ['Policy', 'Assignee', 'Rules', 'Created', ''].map((c) => h('th', { scope: 'col' }, c)))),
      h('tbody', {}, rows.map((p) => policyRow(p, refresh)))) : message('info', 'No policies: nothing is shared.'),
    h('nav', { class: 'pager', 'aria-label': 'Pages' }, cursor ? link('/policies', 'First page') : null, page.cursor ? link(`/policies${query({ cursor: page.cursor })}`, 'Next page') : null),
    session.operator ? createForm(refresh) : message('info', 'Only the node\'s operator creates and deletes policies.'));
}
