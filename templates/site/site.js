// utilgate site: the index's filters and sort (kept in the address, so a link opens the same
// view) and a case chart's point details on hover and focus. No request leaves the page; every
// figure is also in the page's tables and the marks' tooltips, so nothing needs this script.
"use strict";

function readHash() {
  const state = new URLSearchParams(location.hash.slice(1));
  return state;
}

function indexPage(form) {
  const rows = Array.from(document.querySelectorAll("tr.case"));
  const shown = document.getElementById("shown");
  const fields = ["gpu", "model", "precision", "phase", "verdict"];
  const restore = () => {
    const state = readHash();
    for (const el of form.elements) {
      if (el.name) el.value = state.get(el.name) || (el.name === "sort" ? "name" : "");
    }
  };
  const apply = () => {
    const state = new URLSearchParams();
    for (const el of form.elements) {
      if (el.name && el.value && !(el.name === "sort" && el.value === "name")) state.set(el.name, el.value);
    }
    const text = (form.elements.q.value || "").trim().toLowerCase();
    let visible = 0;
    for (const row of rows) {
      const keep = fields.every((f) => !form.elements[f].value || row.dataset[f] === form.elements[f].value)
        && (!text || row.dataset.name.toLowerCase().includes(text));
      row.hidden = !keep;
      if (keep) visible += 1;
    }
    const sort = form.elements.sort.value;
    const num = (row, f) => (row.dataset[f] === "" ? null : Number(row.dataset[f]));
    for (const body of document.querySelectorAll("table.cases tbody")) {
      const list = Array.from(body.children);
      list.sort((a, b) => {
        if (sort === "drop" || sort === "util") {
          const f = sort;
          const x = num(a, f), y = num(b, f);
          if (x !== y) {
            if (x === null) return 1;
            if (y === null) return -1;
            return sort === "drop" ? y - x : x - y;
          }
        }
        return a.dataset.name.localeCompare(b.dataset.name, undefined, { numeric: true });
      });
      // Rows move only when the order changed: moving the row under a pointer as its link
      // is clicked would swallow the click.
      if (list.some((row, i) => body.children[i] !== row)) {
        for (const row of list) body.appendChild(row);
      }
    }
    for (const group of document.querySelectorAll("section.group")) {
      group.hidden = !group.querySelector("tr.case:not([hidden])");
    }
    shown.textContent = visible + " of " + rows.length + " shown";
    const hash = state.toString();
    if (location.hash.slice(1) !== hash) history.replaceState(null, "", hash ? "#" + hash : location.pathname);
  };
  restore();
  apply();
  // Every control fires "input" as it changes (a select too); "change" would fire again on
  // blur, as the reader clicks a link.
  form.addEventListener("input", apply);
  window.addEventListener("hashchange", () => { restore(); apply(); });
}

function casePage() {
  const info = document.getElementById("point");
  const show = (mark) => {
    // The mark's tooltip says it all: night, run, commit, verdict, utilisation, step time.
    const title = mark.querySelector("title");
    info.textContent = title ? title.textContent : "";
    for (const m of document.querySelectorAll(".mark.current")) m.classList.remove("current");
    for (const m of document.querySelectorAll('.mark[data-run="' + mark.dataset.run + '"]')) m.classList.add("current");
  };
  for (const mark of document.querySelectorAll(".chart .mark")) {
    mark.addEventListener("mouseenter", () => show(mark));
    mark.addEventListener("focus", () => show(mark));
  }
  // The scale toggle: the chart draws both scales' guides and shows one; each mark keeps its
  // height on the floor scale in `y` (as drawn) and on the fitted scale in `data-fit`.
  const chart = document.querySelector("svg.util-chart");
  const toggle = document.querySelector(".toggle");
  if (!chart || !toggle) return;
  const uses = Array.from(chart.querySelectorAll(".mark use"));
  const floorY = uses.map((u) => u.getAttribute("y"));
  toggle.hidden = false;
  for (const button of toggle.querySelectorAll("button")) {
    button.addEventListener("click", () => {
      const scale = button.dataset.show;
      for (const b of toggle.querySelectorAll("button")) b.setAttribute("aria-pressed", String(b === button));
      chart.dataset.scale = scale;
      uses.forEach((u, i) => u.setAttribute("y", scale === "fit" ? u.dataset.fit : floorY[i]));
    });
  }
}

document.addEventListener("DOMContentLoaded", () => {
  const form = document.getElementById("filters");
  if (form) indexPage(form);
  if (document.getElementById("point")) casePage();
});
