// The last line of defence for data the page did not produce (a stored or imported run): a part that
// throws while rendering is replaced by one line saying what failed, and the rest of the page stays.
// Stored data is validated before rendering (stored-rollout.ts); this catches what slips through.
import { Component, type ReactNode } from 'react';

export class ErrorBoundary extends Component<{ what: string; children: ReactNode }, { error: Error | null }> {
  state: { error: Error | null } = { error: null };

  static getDerivedStateFromError(error: Error) {
    return { error };
  }

  render() {
    if (this.state.error) return <p className="error" role="alert" data-testid="render-error">Could not show {this.props.what}: {this.state.error.message}</p>;
    return this.props.children;
  }
}
