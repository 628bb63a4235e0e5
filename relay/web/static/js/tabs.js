// ARIA tabs (WAI-ARIA Authoring Practices, automatic activation): a
// role=tablist of role=tab buttons, each naming its role=tabpanel by
// aria-controls. One tab is in the Tab order; the arrow keys, Home and End
// move between the tabs shown and select the one they land on. A hidden
// tab is one the person may not use: it is skipped, and its panel stays
// hidden.

export class Tabs {
  constructor(tablist) {
    this.list = tablist;
    this.tabs = [...tablist.querySelectorAll('[role=tab]')];
    for (const t of this.tabs) t.addEventListener('click', () => this.select(t.id));
    tablist.addEventListener('keydown', (e) => this.key(e));
  }

  /** shown are the tabs the person may use, in order. */
  shown() { return this.tabs.filter((t) => !t.hidden); }

  /** selected is the id of the selected tab. */
  selected() { return this.tabs.find((t) => t.getAttribute('aria-selected') === 'true')?.id || ''; }

  /** allowed says whether tab id is shown. */
  allowed(id) { return this.tabs.some((t) => t.id === id && !t.hidden); }

  /** select shows tab id's panel and hides the others; a hidden tab selects the first shown instead. */
  select(id, focus = false) {
    let tab = this.tabs.find((t) => t.id === id && !t.hidden);
    if (!tab) tab = this.shown()[0];
    if (!tab) return;
    for (const t of this.tabs) {
      const on = t === tab;
      t.setAttribute('aria-selected', String(on));
      t.tabIndex = on ? 0 : -1;
      document.getElementById(t.getAttribute('aria-controls')).hidden = !on;
    }
    if (focus) tab.focus();
  }

  /** allow shows or hides a tab; hiding the selected one selects the first shown. */
  allow(id, yes) {
    const tab = this.tabs.find((t) => t.id === id);
    if (!tab || tab.hidden === !yes) return;
    tab.hidden = !yes;
    if (!yes && this.selected() === id) this.select('');
  }

  key(e) {
    const shown = this.shown();
    const at = shown.findIndex((t) => t.id === this.selected());
    const to = { ArrowRight: at + 1, ArrowLeft: at - 1, Home: 0, End: shown.length - 1 }[e.key];
    if (to === undefined || !shown.length) return;
    e.preventDefault();
    this.select(shown[(to + shown.length) % shown.length].id, true);
  }
}
