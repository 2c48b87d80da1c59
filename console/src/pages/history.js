// The history of a consignment as a timeline: who changed what, when; each revision a way to
// see the consignment as it was.

import { h, formatDate, didLabel, message } from '../dom.js';

const LABEL = { CREATE: 'Created', UPDATE: 'Updated', ADD: 'Added' };

export function historyTimeline(entries, at, showAt) {
  if (!entries.length) return message('info', 'No revisions in this scope.');
  const limit = at ? Date.parse(at) : Infinity;
  return h('ol', { class: 'timeline' }, entries.map((e) => {
    const future = Date.parse(e.date) > limit;
    return h('li', { class: `revision ${e.type.toLowerCase()}${future ? ' future' : ''}`, dataset: { revision: e.revision } },
      h('div', { class: 'when' }, h('time', { datetime: e.date }, formatDate(e.date))),
      h('div', { class: 'what' },
        h('strong', {}, LABEL[e.type] || e.type), ' ',
        e.object ? h('span', { class: 'object' }, e.object.type) : null,
        ' by ', didLabel(e.userIdentity), ' of ', didLabel(e.organizationIdentity),
        future ? h('em', {}, ' (after the instant shown)') : null,
        (e.changed || []).length && e.type !== 'CREATE'
          ? h('ul', { class: 'changed' }, e.changed.map((p) => h('li', {}, h('code', {}, p))))
          : null,
        h('button', { type: 'button', class: 'link', onclick: () => showAt(e.date) }, 'Show as of this revision')));
  }));
}
