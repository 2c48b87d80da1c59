// The SPARQL editor: CodeMirror 6 with its SPARQL mode, labelled for assistive technology.
// It lives in a shadow root: CodeMirror styles itself at run time, which a document's strict
// Content-Security-Policy forbids as a <style> element, and allows as the shadow root's
// constructed style sheets.

import { EditorView, keymap, lineNumbers, highlightActiveLine } from '@codemirror/view';
import { EditorState } from '@codemirror/state';
import { defaultKeymap, history, historyKeymap } from '@codemirror/commands';
import { StreamLanguage, syntaxHighlighting, defaultHighlightStyle, bracketMatching } from '@codemirror/language';
import { sparql } from '@codemirror/legacy-modes/mode/sparql';

const theme = EditorView.theme({
  '&': { minHeight: '10rem', backgroundColor: '#fff', fontSize: '14px' },
  '.cm-scroller': { fontFamily: 'ui-monospace, SFMono-Regular, Menlo, monospace' },
  '&.cm-focused': { outline: '3px solid #f0a500' },
});

export function sparqlEditor(host, { doc, label, onRun }) {
  const root = host.attachShadow({ mode: 'open' });
  const run = () => {
    onRun();
    return true;
  };
  return new EditorView({
    parent: root,
    root,
    state: EditorState.create({
      doc,
      extensions: [
        lineNumbers(),
        history(),
        highlightActiveLine(),
        bracketMatching(),
        StreamLanguage.define(sparql),
        syntaxHighlighting(defaultHighlightStyle),
        keymap.of([{ key: 'Mod-Enter', run }, ...defaultKeymap, ...historyKeymap]),
        EditorView.contentAttributes.of({ 'aria-label': label, 'aria-multiline': 'true' }),
        EditorView.lineWrapping,
        theme,
      ],
    }),
  });
}
