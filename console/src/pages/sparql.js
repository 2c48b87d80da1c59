// The analysts' page: a SPARQL editor, the README's example queries, results as a table (and
// a bar chart when they have the shape of one), who answered, and every refusal explained.

import examples from 'examples';
import { BASE, ApiError, sessionEnded } from '../api.js';
import { h, fill, message, field } from '../dom.js';
import { sparqlEditor } from '../editor.js';
import { chartable, barChart } from '../chart.js';

let lastQuery = examples.length ? examples[0].query : 'SELECT * WHERE { ?s ?p ?o } LIMIT 10';

async function runQuery(text, scope) {
  const response = await fetch(`${BASE}/sparql?scope=${encodeURIComponent(scope)}`, {
    method: 'POST',
    credentials: 'same-origin',
    headers: {
      'content-type': 'application/sparql-query',
      accept: 'application/sparql-results+json, text/turtle;q=0.9',
      'x-console-request': '1',
    },
    body: text,
  });
  const source = response.headers.get('sparql-source');
  if (!response.ok) {
    let body = null;
    const raw = await response.text();
    try { body = JSON.parse(raw); } catch { body = { message: raw.slice(0, 500) }; }
    const error = new ApiError(response.status, body, response.headers.get('retry-after'));
    if (response.status === 401) sessionEnded(error);
    throw error;
  }
  const type = response.headers.get('content-type') || '';
  return { source, type, body: type.includes('json') ? await response.json() : await response.text() };
}

function resultsView({ source, type, body }) {
  const sourceLine = h('p', { class: 'source' }, 'Answered by: ', h('strong', { class: 'sparql-source' }, source || 'unknown'));
  if (!type.includes('json')) return [sourceLine, h('pre', { class: 'graph' }, body)];
  if ('boolean' in body) return [sourceLine, h('p', { class: 'boolean' }, `ASK: ${body.boolean}`)];
  const vars = body.head.vars || [];
  const rows = body.results.bindings || [];
  return [
    sourceLine,
    h('p', { class: 'count' }, `${rows.length} row${rows.length === 1 ? '' : 's'}`),
    chartable(vars, rows) ? barChart(vars, rows) : null,
    h('div', { class: 'scroll' }, h('table', { class: 'results' },
      h('thead', {}, h('tr', {}, vars.map((v) => h('th', { scope: 'col' }, v)))),
      h('tbody', {}, rows.map((b) => h('tr', {}, vars.map((v) => h('td', { title: b[v] && b[v].datatype ? b[v].datatype : undefined }, b[v] ? b[v].value : '')))))))];
}

export async function sparqlPage(main) {
  const scope = h('select', { name: 'scope' }, ['all', 'own', 'shared'].map((s) => h('option', { value: s }, s)));
  const picker = h('select', { name: 'example' },
    h('option', { value: '' }, '— pick an example —'),
    examples.map((e, i) => h('option', { value: String(i) }, e.title)));
  const about = h('p', { class: 'hint example-about' });
  const holder = h('div', { class: 'editor', id: 'sparql-editor' });
  const results = h('div', { class: 'results-area', 'aria-live': 'polite' });
  const runButton = h('button', { type: 'submit' }, 'Run query');
  let editor;
  const run = async () => {
    lastQuery = editor.state.doc.toString();
    runButton.disabled = true;
    fill(results, message('info', 'Running…'));
    try {
      fill(results, resultsView(await runQuery(lastQuery, scope.value)));
    } catch (error) {
      const prefix = error.status === 400 ? 'The query was refused: ' : '';
      fill(results, message('error', `${prefix}${error.message}`));
    } finally {
      runButton.disabled = false;
    }
  };
  picker.addEventListener('change', () => {
    const example = examples[Number(picker.value)];
    if (!picker.value || !example) return;
    editor.dispatch({ changes: { from: 0, to: editor.state.doc.length, insert: example.query } });
    if (example.scope) scope.value = example.scope;
    about.textContent = example.description;
  });
  fill(main,
    h('h1', {}, 'SPARQL'),
    h('p', {}, 'Queries see exactly what your organisation may read. Ctrl+Enter runs the query.'),
    h('form', { class: 'sparql', onsubmit: (event) => { event.preventDefault(); run(); } },
      h('div', { class: 'row' }, field('Example queries', picker), field('Scope', scope)),
      about,
      h('div', { class: 'field' }, h('span', { class: 'label', id: 'sparql-label' }, 'Query'), holder),
      runButton),
    results);
  editor = sparqlEditor(holder, { doc: lastQuery, label: 'SPARQL query', onRun: run });
}
