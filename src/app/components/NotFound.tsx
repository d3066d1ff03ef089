export function NotFound({ what, reason }: { what: string; reason?: string }) {
  return (
    <div className="not-found" data-testid="not-found">
      <h2>{reason ? '403 — share link needed' : '404 — not found'}</h2>
      <p>
        {reason ?? `There is no ${what} on this server. Share links only work on the server that stored the run (or import its exported JSON).`}
      </p>
      <a href="#/">back to setup</a>
    </div>
  );
}
