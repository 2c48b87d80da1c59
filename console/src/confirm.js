// A destructive action in two steps: a button that first says what the action does, then
// the action itself (or Cancel).

import { h, fill, message } from './dom.js';

/** A table cell holding `ask`; it shows `explanation` and a `confirm` button running `act`. */
export function confirmCell({ ask, explanation, confirm, act }) {
  const cell = h('td', {});
  const first = h('button', {
    type: 'button',
    onclick: () => {
      const go = h('button', {
        type: 'button', class: 'danger',
        onclick: async () => {
          go.disabled = true;
          try {
            await act();
          } catch (error) {
            cell.append(message('error', error.message));
            go.disabled = false;
          }
        },
      }, confirm);
      fill(cell, explanation, go, ' ', h('button', { type: 'button', onclick: () => fill(cell, first) }, 'Cancel'));
      go.focus();
    },
  }, ask);
  cell.append(first);
  return cell;
}
