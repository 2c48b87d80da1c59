// Notifications: the list, and the live stream (SSE) that adds new shares to it and to the
// unseen count in the menu without a reload.

import { BASE, get, query } from '../api.js';
import { h, fill, formatDate, message, didLabel } from '../dom.js';
import { link } from '../main.js';

const badge = h('span', { class: 'badge', 'aria-label': '0 unseen', hidden: true }, '0');
const toasts = h('div', { class: 'toasts', 'aria-live': 'polite' });
// Whether new shares arrive by themselves right now.
const indicator = h('span', { class: 'stream-state', title: 'Notifications arrive live while this says live' }, 'offline');

const live = {
  badge,
  indicator,
  source: null,
  session: null,
  unseen: new Set(),
  seenKey: '',

  // Which start is current: a stop, or a start after it, makes an earlier one's late steps
  // do nothing.
  generation: 0,

  async start(session) {
    this.stop();
    const generation = this.generation;
    this.session = session;
    this.seenKey = `dataspace-node:seen:${session.identity}`;
    document.body.append(toasts);
    // The stream first: what commits while the list is read arrives by it (the set takes
    // what both bring once).
    this.connect();
    try {
      const page = await get(`${BASE}/notifications${query({ limit: 100 })}`);
      if (generation !== this.generation) return;
      const seen = Number(localStorage.getItem(this.seenKey) || 0);
      for (const n of page.entities || []) if (Number(n.id) > seen) this.unseen.add(n.id);
      this.show();
    } catch {
      // The count starts empty; the stream still adds to it.
    }
  },

  connect() {
    const source = new EventSource(`${BASE}/notifications/stream`);
    this.source = source;
    source.addEventListener('open', () => { indicator.textContent = 'live'; });
    source.addEventListener('message', (event) => {
      let notification;
      try {
        notification = JSON.parse(event.data);
      } catch {
        return;
      }
      this.unseen.add(notification.id);
      this.show();
      document.dispatchEvent(new CustomEvent('dataspace-notification', { detail: notification }));
      toast(notification);
    });
    source.addEventListener('error', () => {
      indicator.textContent = 'reconnecting';
      if (source.readyState !== EventSource.CLOSED || this.source !== source) return;
      // The stream ends with the session: ask whether it still stands (a 401 goes to sign-in).
      setTimeout(() => {
        if (this.source !== source) return;
        // Any answer but a 401 (which goes to sign-in) is worth another try.
        get('/authentication/session').then(
          () => this.source === source && this.connect(),
          (error) => error.status !== 401 && this.source === source && this.connect(),
        );
      }, 3000);
    });
  },

  stop() {
    this.generation += 1;
    if (this.source) this.source.close();
    this.source = null;
    indicator.textContent = 'offline';
    this.unseen.clear();
    this.show();
  },

  markSeen(ids) {
    const newest = Math.max(0, ...ids.map(Number).filter(Number.isFinite));
    const seen = Number(localStorage.getItem(this.seenKey) || 0);
    if (newest > seen) localStorage.setItem(this.seenKey, String(newest));
    this.unseen.clear();
    this.show();
  },

  show() {
    const n = this.unseen.size;
    badge.textContent = n > 99 ? '99+' : String(n);
    badge.setAttribute('aria-label', `${n} unseen`);
    badge.hidden = n === 0;
  },
};

function toast(n) {
  const item = h('p', { class: 'toast' }, 'New share: ',
    link(`/consignments/${encodeURIComponent(n.consignment.aigId)}`, n.consignment.identifier || n.consignment.aigId),
    ' from ', didLabel(n.provider));
  toasts.append(item);
  setTimeout(() => item.remove(), 8000);
}

function row(n) {
  return h('tr', { class: 'notification', dataset: { id: n.id } },
    h('td', {}, formatDate(n.date)),
    h('td', {}, n.type === 'ConsignmentShared' ? 'Shared with us' : n.type),
    h('td', {}, link(`/consignments/${encodeURIComponent(n.consignment.aigId)}`, n.consignment.identifier || n.consignment.aigId)),
    h('td', {}, didLabel(n.provider)),
    h('td', {}, didLabel(n.policy)));
}

export async function notificationsPage(main, { query: params }) {
  const cursor = params.get('cursor') || '';
  fill(main, h('h1', {}, 'Notifications'), message('info', 'Loading…'));
  const page = await get(`${BASE}/notifications${query({ limit: 50, cursor })}`);
  const tbody = h('tbody', {}, (page.entities || []).map(row));
  const empty = message('info', 'No notifications yet. New shares appear here as they arrive.');
  fill(main, h('h1', {}, 'Notifications'),
    h('p', {}, 'Consignments shared with your organisation, newest first. New ones appear live.'),
    (page.entities || []).length ? null : empty,
    h('table', { class: 'list' },
      h('thead', {}, h('tr', {}, ['When', 'What', 'Consignment', 'Provider', 'Policy'].map((c) => h('th', { scope: 'col' }, c)))),
      tbody),
    h('nav', { class: 'pager', 'aria-label': 'Pages' },
      cursor ? link('/notifications', 'Newest') : null,
      page.cursor ? link(`/notifications${query({ cursor: page.cursor })}`, 'Older') : null));
  // Only the newest page says what is seen.
  if (!cursor) live.markSeen((page.entities || []).map((n) => n.id));
  const onNew = (event) => {
    if (!main.isConnected) {
      document.removeEventListener('dataspace-notification', onNew);
      return;
    }
    if (cursor) return;
    empty.remove();
    tbody.prepend(row(event.detail));
    live.markSeen([event.detail.id]);
  };
  document.addEventListener('dataspace-notification', onNew);
}

export { live };
