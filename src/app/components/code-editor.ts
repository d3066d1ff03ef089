// The module editor of "Your environment": CodeMirror 6 with JavaScript highlighting. Its own module,
// imported only when the panel opens, so the editor's code is a chunk of its own that a page which never
// shows it does not load.
import { basicSetup, EditorView } from 'codemirror';
import { javascript } from '@codemirror/lang-javascript';

export interface CodeEditor {
  /** Replaces the whole text (a file opened, a fork's code), unless it is the text already there. */
  setText(text: string): void;
  destroy(): void;
}

export function mountCodeEditor(parent: HTMLElement, o: { text: string; label: string; onChange: (text: string) => void }): CodeEditor {
  const view = new EditorView({
    doc: o.text,
    parent,
    extensions: [
      basicSetup,
      javascript(),
      EditorView.contentAttributes.of({ 'aria-label': o.label }),
      EditorView.updateListener.of((u) => {
        if (u.docChanged) o.onChange(u.state.doc.toString());
      }),
    ],
  });
  return {
    setText(text) {
      if (view.state.doc.toString() !== text) view.dispatch({ changes: { from: 0, to: view.state.doc.length, insert: text } });
    },
    destroy: () => view.destroy(),
  };
}
