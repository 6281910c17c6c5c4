"use strict";
(function () {
  const rows = Array.from(document.querySelectorAll("details.row"));
  const form = document.getElementById("filters");
  const shown = document.getElementById("shown");
  const fields = { verdict: "verdict", category: "category", suite: "suite" };
  const texts = new Array(rows.length);

  function fill(name) {
    const select = form.elements[name];
    const seen = new Map();
    for (const row of rows) {
      const value = row.dataset[fields[name]];
      seen.set(value, (seen.get(value) || 0) + 1);
    }
    for (const [value, count] of Array.from(seen).sort()) {
      const option = document.createElement("option");
      option.value = value;
      option.textContent = (value || "(none)") + " (" + count + ")";
      select.appendChild(option);
    }
    if (seen.size < 2 && name === "suite") {
      select.closest("label").hidden = true;
    }
  }

  function text(index) {
    if (texts[index] === undefined) {
      texts[index] = rows[index].textContent.toLowerCase();
    }
    return texts[index];
  }

  function apply() {
    const wanted = {};
    for (const name of Object.keys(fields)) {
      wanted[name] = form.elements[name].value;
    }
    const blockingOnly = form.elements.blocking.checked;
    const query = form.elements.q.value.trim().toLowerCase();
    let count = 0;
    rows.forEach(function (row, index) {
      let visible = !blockingOnly || row.dataset.blocking === "true";
      for (const name of Object.keys(fields)) {
        if (visible && wanted[name] !== "*" && row.dataset[fields[name]] !== wanted[name]) {
          visible = false;
        }
      }
      if (visible && query) {
        visible = row.dataset.id.toLowerCase().includes(query) || text(index).includes(query);
      }
      row.hidden = !visible;
      if (visible) {
        count += 1;
      }
    });
    shown.textContent = "showing " + count.toLocaleString("en") + " of " +
      rows.length.toLocaleString("en") + " rows";
  }

  let timer = null;
  form.addEventListener("change", apply);
  form.addEventListener("input", function () {
    clearTimeout(timer);
    timer = setTimeout(apply, 150);
  });
  form.addEventListener("submit", function (event) { event.preventDefault(); });
  Object.keys(fields).forEach(fill);
  apply();
  document.body.dataset.ready = "true";
})();
